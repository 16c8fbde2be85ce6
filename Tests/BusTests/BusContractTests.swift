// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
import BusCore
import Testing

/// The client's typed `io.appd.Bus.Subscribe` (BusCore, used by AppdClient) says what the
/// served IDL says: a field changed in one fails here.
@Suite struct BusContractTests {
    @Test func theClientsSubscribeAgreesWithTheServedInterface() throws {
        let interface = try VarlinkInterface(parsing: BusInterface.idl)
        let found = interface.differences(method: BusContract.Subscribe.method, input: BusContract.Subscribe.self, reply: SubscribedEvent.self)
        #expect(found == [], "\(found)")
        let topics = interface.differences(method: BusContract.Topics.method, input: BusContract.Topics.self, reply: BusContract.Topics.Reply.self)
        #expect(topics == [], "\(topics)")
        let publish = interface.differences(method: BusContract.Publish.method, input: BusContract.Publish.self, reply: BusContract.Publish.Reply.self)
        #expect(publish == [], "\(publish)")
    }

    @Test func theVarlinkServiceCommandsAgreeWithItsInterface() throws {
        let interface = try VarlinkInterface(parsing: VarlinkServiceInterface.idl)
        typealias Service = VarlinkServiceInterface
        #expect(interface.differences(method: Service.GetInfo.method, input: Service.GetInfo.self, reply: Service.GetInfo.Reply.self) == [])
        let description = interface.differences(
            method: Service.GetInterfaceDescription.method, input: Service.GetInterfaceDescription.self, reply: Service.GetInterfaceDescription.Reply.self)
        #expect(description == [])
    }
}
