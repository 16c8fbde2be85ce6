// SPDX-License-Identifier: Apache-2.0
/// One published event in its wire form (the IDL's `Event`, as JSON and as bytes), made by the
/// first subscriber of the publish that writes it and handed to the others as the publisher
/// walks them: a fan-out encodes once and looks nothing up per subscriber.
struct EventWireForm {
    var made: (json: JSONValue, bytes: [UInt8])?

    /// The form, made by `make` the first time.
    mutating func get(_ make: () -> (json: JSONValue, bytes: [UInt8])) -> (json: JSONValue, bytes: [UInt8]) {
        if let made { return made }
        let form = make()
        made = form
        return form
    }
}
