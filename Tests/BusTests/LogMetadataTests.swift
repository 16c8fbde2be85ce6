// SPDX-License-Identifier: Apache-2.0
@testable import BusCore
import Testing

/// `LogMetadata` reads and writes as a dictionary but keeps its pairs in key order, so a line is
/// written without a sort: the order, replacement and removal a dictionary would give.
@Suite struct LogMetadataTests {
    @Test func pairsAreKeptInKeyOrderWhateverOrderTheyCameIn() {
        let metadata: LogMetadata = ["status": "200", "client": "127.0.0.1", "path": "/v1/x", "method": "POST", "ms": "0.013"]
        #expect(metadata.keys == ["client", "method", "ms", "path", "status"])
        #expect(metadata["path"] == "/v1/x" && metadata["status"] == "200" && metadata["nope"] == nil)
        #expect(metadata.count == 5)
        #expect(
            LogLineTests.written(LogRecord(label: "appd.http", level: .info, message: "http", metadata: metadata))
                == "info appd.http: http client=127.0.0.1 method=POST ms=0.013 path=/v1/x status=200\n")
    }

    @Test func settingReplacesOrRemovesAndALaterLiteralPairWins() {
        var metadata: LogMetadata = ["b": "1", "a": "2", "b": "3"]
        #expect(Array(metadata.map(\.value)) == ["2", "3"])
        metadata["a"] = "4"
        metadata["c"] = "5"
        metadata["0"] = "6"
        #expect(metadata.keys == ["0", "a", "b", "c"] && metadata["a"] == "4")
        metadata["b"] = nil
        metadata["missing"] = nil
        #expect(metadata.keys == ["0", "a", "c"])
        #expect(metadata == ["c": "5", "a": "4", "0": "6"])
        #expect(metadata != ["c": "5", "a": "4"])
        #expect(LogMetadata().isEmpty && LogMetadata().description == "[:]")
        #expect(metadata.description == #"["0": "6", "a": "4", "c": "5"]"#)
    }

    @Test func mergingAndConvertingKeepEveryKeyOnce() {
        let base: LogMetadata = ["method": "m", "peer.uid": "0"]
        let merged = base.merging(["outcome": "ok", "method": "n"]) { $1 }
        #expect(merged.keys == ["method", "outcome", "peer.uid"] && merged["method"] == "n")
        #expect(base.merging(["method": "n"]) { old, _ in old }["method"] == "m")
        #expect(merged.mapValues { $0.count } == ["method": 1, "outcome": 2, "peer.uid": 1])
        #expect(LogMetadata(["z": "1", "y": "2"]).keys == ["y", "z"])
    }
}
