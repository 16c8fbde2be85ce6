// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The database URL as operators give it (`postgres://user:password@host:port/db?…`, or a
/// libpq `key=value` string), and its form without the password.
public enum PostgresURL {
    /// Whether `value` names a PostgreSQL database rather than a SQLite file.
    public static func isPostgres(_ value: String) -> Bool {
        value.hasPrefix("postgres://") || value.hasPrefix("postgresql://") || value.contains("dbname=") || value.contains("host=")
    }

    /// The password (in the URL's user info, or a `password=` key) replaced by `***`.
    public static func redacted(_ value: String) -> String {
        if let scheme = value.firstRange(of: "://") {
            let rest = value[scheme.upperBound...]
            guard let at = rest.firstIndex(of: "@") else { return value }
            let userInfo = rest[..<at]
            guard let colon = userInfo.firstIndex(of: ":") else { return value }
            return String(value[..<scheme.upperBound]) + userInfo[..<colon] + ":***" + rest[at...]
        }
        // key=value form: hide password=… up to the next space.
        var words = value.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        for i in words.indices where words[i].hasPrefix("password=") { words[i] = "password=***" }
        return words.joined(separator: " ")
    }
}

extension PostgresURL {
    /// `url` with `search_path` set to `schema` (then `public`, where the citext type lives):
    /// one database can hold several deployments, a schema each.
    public static func url(_ url: String, schema: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)%2Cpublic"
    }

    /// Creates `schema` in the database at `url` unless it exists (blocks: call it from a
    /// thread that may wait, or through `PostgresDatabase.open`'s kind of pool).
    public static func createSchema(_ schema: String, at url: String) throws {
        let connection = try PostgresConnection(conninfo: url, setup: "SET client_min_messages = warning")
        try connection.executeScript("CREATE SCHEMA IF NOT EXISTS \"\(schema.replacing("\"", with: "\"\""))\"")
    }

    /// Drops `schema` and everything in it (a throwaway deployment's: a test's, a benchmark's);
    /// nothing when it does not exist. Blocks, as `createSchema` does.
    public static func dropSchema(_ schema: String, at url: String) throws {
        let connection = try PostgresConnection(conninfo: url, setup: "SET client_min_messages = warning")
        try connection.executeScript("DROP SCHEMA IF EXISTS \"\(schema.replacing("\"", with: "\"\""))\" CASCADE")
    }
}
