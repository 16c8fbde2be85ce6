// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing

@Suite struct VarlinkMessageTests {
    func call(_ text: String) throws(VarlinkProtocolError) -> VarlinkCall {
        try VarlinkCall(frame: Array(text.utf8))
    }

    @Test func acceptsTheLenientForms() throws {
        #expect(try call(#"{"method":"a.b.C"}"#) == VarlinkCall(method: "a.b.C"))
        #expect(try call(#"{"method":"a.b.C","parameters":null,"more":false,"oneway":null,"extra":1}"#) == VarlinkCall(method: "a.b.C"))
        #expect(try call(#"{"method":"a.b.C","parameters":{"x":1},"more":true}"#) == VarlinkCall(method: "a.b.C", parameters: ["x": 1], more: true))
    }

    @Test(arguments: [
        #"[1]"#, #""x""#, #"{}"#, #"{"method":1}"#, #"{"method":"a.b.C","parameters":[]}"#, #"{"method":"a.b.C","more":"yes"}"#, #"{"method":"a.b.C","more":true,"oneway":true}"#,
        "", "{",
    ])
    func refusesWhatIsNotACall(text: String) {
        #expect(throws: VarlinkProtocolError.self) { try call(text) }
    }

    @Test func repliesCarryOnlyTheThreeKeys() {
        var out: [UInt8] = []
        VarlinkReply(parameters: ["a": 1]).write(into: &out)
        VarlinkReply(parameters: [:], continues: true).write(into: &out)
        VarlinkReply(parameters: ["parameter": "x"], error: "org.varlink.service.InvalidParameter").write(into: &out)
        let text = String(decoding: out, as: UTF8.self)
        #expect(
            text
                == "{\"parameters\":{\"a\":1}}\0{\"continues\":true,\"parameters\":{}}\0{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"x\"}}\0"
        )
    }

    @Test func framesSplitAnywhereAndManyPerRead() throws {
        var reader = VarlinkFrameReader(maxBytes: 1024)
        let stream = Array("{\"a\":1}\0{\"b\":2}\0{\"c\":".utf8)
        for byte in stream { reader.append([byte]) }
        #expect(try reader.nextFrame().map { Array($0) } == Array("{\"a\":1}".utf8))
        #expect(try reader.nextFrame().map { Array($0) } == Array("{\"b\":2}".utf8))
        #expect(try reader.nextFrame() == nil)
        reader.append(Array("3}\0".utf8))
        #expect(try reader.nextFrame().map { Array($0) } == Array("{\"c\":3}".utf8))
        reader.compact()
        #expect(reader.pendingCount == 0)
    }

    @Test func anOversizedFrameIsRefusedBeforeItsEnd() {
        var reader = VarlinkFrameReader(maxBytes: 16)
        reader.append([UInt8](repeating: 0x20, count: 17))
        #expect(throws: VarlinkProtocolError.self) { try reader.nextFrame() }
    }
}
