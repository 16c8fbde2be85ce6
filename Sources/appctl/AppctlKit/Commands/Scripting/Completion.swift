// SPDX-License-Identifier: Apache-2.0
/// `appctl completion bash`.
struct Completion: Leaf {
    static let path = ["completion"]
    static let abstract = "Print a shell completion script."
    static let discussion = "Load it with: source <(appctl completion bash)"
    @Argument("shell", "bash.") var shell: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard shell == "bash" else { throw .usage("completion supports 'bash'", command: Self.command) }
        print(Self.bash(Appctl.tree.map(\.name)))
        return ExitCode.ok
    }

    /// Completes subcommands, then interface methods by asking the daemon (`appctl <interface> --help`).
    static func bash(_ commands: [String]) -> String {
        """
        # bash completion for appctl
        _appctl() {
            local cur=${COMP_WORDS[COMP_CWORD]}
            if [ "$COMP_CWORD" -eq 1 ]; then
                local interfaces
                interfaces=$(appctl info --json 2>/dev/null | tr ',' '\\n' | sed -n 's/.*"\\([a-z]*\\.[a-zA-Z.]*\\)".*/\\1/p' | awk -F. '{print tolower($NF)}')
                COMPREPLY=($(compgen -W "\(commands.joined(separator: " ")) $interfaces" -- "$cur"))
            elif [ "$COMP_CWORD" -eq 2 ]; then
                local methods
                methods=$(appctl "${COMP_WORDS[1]}" --help 2>/dev/null | awk '/^METHODS:/{m=1;next} /^$/{m=0} m{print $1}')
                COMPREPLY=($(compgen -W "$methods" -- "$cur"))
            else
                local fields
                fields=$(appctl "${COMP_WORDS[1]}" "${COMP_WORDS[2]}" --help 2>/dev/null | awk '/^FIELDS:/{m=1;next} /^$/{m=0} m{print $1}')
                COMPREPLY=($(compgen -W "$fields --json --socket --timeout --help" -- "$cur"))
            fi
        }
        complete -F _appctl appctl
        """
    }
}
