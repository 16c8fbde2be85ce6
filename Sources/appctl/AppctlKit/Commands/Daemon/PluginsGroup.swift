// SPDX-License-Identifier: Apache-2.0
/// `appctl plugins [restart NAME | enable NAME | disable NAME | rescan]`.
enum PluginsGroup {
    static let group = CommandGroup(
        name: "plugins", abstract: "List the plugins (state, pid, restarts, interfaces, last error); restart, enable, disable, rescan external ones.",
        discussion: """
            External plugins are folders with a plugin.json in the plugin directories (see docs/plugins.md). restart drains the plugin's calls in flight, then restarts \
            it; enable and disable are kept across restarts of appd; rescan picks up new folders and drops removed ones. These four are admin only.
            """,
        leaves: [PluginsRestart.self, PluginsEnable.self, PluginsDisable.self, PluginsRescan.self], fallback: PluginsList.self)
}
