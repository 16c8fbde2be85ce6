// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem

/// The daemon's entry point: parse the command line, load the configuration, then hand over
/// to the wiring in `Appd+Start`.
@main
enum Appd {
    static func main() async {
        // Every file appd creates (database, WAL, plugin folders) is its own alone; the socket's
        // mode is set explicitly.
        umask(0o077)
        // Before any thread starts: large frees stay in the heap (see appd_malloc_keep). An
        // operator's own GLIBC_TUNABLES for malloc win.
        if !(getenv("GLIBC_TUNABLES").map { String(cString: $0).contains("malloc") } ?? false) {
            _ = appd_malloc_keep(4 << 20, 8 << 20)
        }
        var arguments = Array(CommandLine.arguments.dropFirst())
        var restoring: String?
        if arguments.first == "restore" {
            guard arguments.count >= 2, !arguments[1].hasPrefix("-") else {
                printError("Error: restore needs the backup's folder\n\(AppdOptions.usage)")
                exit(64)
            }
            restoring = arguments[1]
            arguments.removeFirst(2)
        }
        let options: AppdOptions
        do {
            options = try AppdOptions.parse(arguments)
        } catch {
            printError("Error: \(error)\n\(AppdOptions.usage)\n  See 'appd --help' for more information.")
            exit(64)
        }
        if options.showHelp { print(AppdOptions.help); return }
        if options.showVersion { print("appd \(Version.current)"); return }
        let config: AppdConfig
        let file: String?
        do {
            (config, file) = try ConfigLoader.load(flags: options.overrides, configFile: options.configFile)
        } catch {
            printError("Error: \(error)")
            exit(78)  // EX_CONFIG: never a half-started daemon
        }
        if let restoring { exit(restore(restoring, config: config)) }
        if options.printConfig {
            // The resolved paths too: where the database, plugins, socket and file really are.
            var printed = config.json
            if case .object(var members) = printed {
                members["configFile"] = file.map(JSONValue.string) ?? .null
                printed = .object(members)
            }
            print(isatty(1) == 1 ? JSONWriter.pretty(printed) : printed.jsonText)
            return
        }
        exit(await start(config, options: options, configFile: file))
    }
}
