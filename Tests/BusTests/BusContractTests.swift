@testable import Bus
import BusCore
import Testing

/// The client's typed `io.appd.Bus.Subscribe` (BusCore, used by AppdClient) says what the
/// served IDL says: a field changed in one fails here.
@Suite struct BusContractTests {
    @Test func theClientsSubscribeAgreesWithTheServedInterface() throws {
        let interface = try VarlinkInterface(parsing: BusInterface.idl)
        let found = interface.differences(method: BusContract.Subscribe.method, input: BusContract.Subscribe.self, reply: SubscribedEvent.self)
        #expect(found == [], "\(found)")
    }
}
