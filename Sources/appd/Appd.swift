#if canImport(Glibc)
import Glibc
#endif
import Bus

/// The daemon's entry point: parse the command line, then hand over to the wiring in `Appd+Start`.
@main
enum Appd {
    static func main() async {
        let options: AppdOptions
        do {
            options = try AppdOptions.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            printError("Error: \(error)\n\n\(AppdOptions.usage)")
            exit(64)
        }
        if options.showHelp { print(AppdOptions.help); return }
        if options.showVersion { print("appd \(Version.current)"); return }
        exit(await start(options))
    }
}
