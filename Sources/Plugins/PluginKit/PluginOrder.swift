// SPDX-License-Identifier: Apache-2.0
/// Orders plugins so each starts after its dependencies (Kahn's algorithm, ties by name so
/// the order is stable), rejecting cycles with the plugins in them.
enum PluginOrder {
    static func sorted(_ manifests: [PluginManifest]) throws(PluginDependencyCycle) -> [PluginManifest] {
        let byName = Dictionary(manifests.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var remaining = Dictionary(
            byName.values.map { ($0.name, Set($0.dependencies.filter { byName[$0] != nil })) }, uniquingKeysWith: { a, _ in a })
        var order: [PluginManifest] = []
        while !remaining.isEmpty {
            let ready = remaining.filter { $0.value.isEmpty }.map(\.key).sorted()
            guard !ready.isEmpty else { throw PluginDependencyCycle(plugins: cycle(in: remaining)) }
            for name in ready {
                remaining[name] = nil
                if let manifest = byName[name] { order.append(manifest) }
                for key in remaining.keys { remaining[key]?.remove(name) }
            }
        }
        return order
    }

    /// One cycle among plugins that all still wait on something, as a closed path.
    static func cycle(in waiting: [String: Set<String>]) -> [String] {
        guard var current = waiting.keys.sorted().first else { return [] }
        var path: [String] = []
        while !path.contains(current) {
            path.append(current)
            guard let next = waiting[current]?.sorted().first else { return path }
            current = next
        }
        let start = path.firstIndex(of: current) ?? 0
        return Array(path[start...]) + [current]
    }
}
