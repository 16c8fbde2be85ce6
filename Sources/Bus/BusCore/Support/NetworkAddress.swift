// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who a caller is, as limits and throttles count callers.
public enum NetworkAddress {
    /// What one client controls: an IPv4 address, or an IPv6 address's /64 (one host is
    /// routinely given a whole /64, so counting each address apart would give it 2^64 tries;
    /// security review finding 12). IPv4-mapped IPv6 counts as its IPv4 address; anything
    /// unparsable counts as itself.
    public static func client(_ address: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let parsed = address.withCString { inet_pton(AF_INET6, $0, &bytes) } == 1
        guard parsed else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        var groups: [String] = []
        for i in stride(from: 0, to: 8, by: 2) { groups.append(String(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]), radix: 16)) }
        return groups.joined(separator: ":") + "::/64"
    }
}

extension Caller {
    /// Where the call came from, as throttles count it: the network client (`NetworkAddress`)
    /// of an HTTP caller, the uid of a socket peer, else the daemon itself.
    public var origin: String {
        if let remoteAddress { return "ip:" + NetworkAddress.client(remoteAddress) }
        if let peer { return "uid:\(peer.uid)" }
        return "local"
    }
}
