// SPDX-License-Identifier: Apache-2.0
/// A container under construction in one of the encoders (`JSONValueEncoder`,
/// `JSONBytesEncoder`): it knows its parent and its key there, so its coding path is worked out
/// only when something asks for it (an error).
protocol EncodingNode: AnyObject {
    var parent: Self? { get }
    var key: (any CodingKey)? { get }
}

extension EncodingNode {
    var codingPath: [any CodingKey] {
        var path: [any CodingKey] = []
        var node = self
        while let key = node.key, let parent = node.parent {
            path.append(key)
            node = parent
        }
        return path.reversed()
    }
}
