// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Testing
import TestSupport
@testable import Auth

/// authResetLinkTemplate: the reset token comes with a link into the app, built from the
/// operator's template; without one, no link.
@Suite(.cleansUp) struct ResetLinkTests {
    func issue(_ h: PluginHarness) async throws -> AuthInterface.IssuedResetToken {
        let mail = try h.bus.subscribe(PasswordResetRequested.self)
        _ = try await h.bus.send(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse", displayName: "Ada"))
        _ = try await h.bus.send(AuthInterface.RequestPasswordReset(email: "ada@example.com"))
        var iterator = mail.makeAsyncIterator()
        let event = try #require(try await iterator.next()).event
        return try await h.bus.send(AuthInterface.IssueResetToken(requestId: event.requestId))  // the daemon holds every capability
    }

    @Test func theIssuedTokenComesWithTheTemplatesLinkAndTheLinksTokenResets() async throws {
        let template = try ResetLinkTemplate("https://app.example.com/reset?token={token}&from=mail")
        let h = try await PluginHarness.make { clock in [try AuthPlugin.testing(clock: clock) { $0.resetLink = template }] }
        let issued = try await issue(h)
        #expect(issued.resetLink == "https://app.example.com/reset?token=\(issued.resetToken)&from=mail")
        let token = try #require(issued.resetLink?.split(separator: "=")[1].split(separator: "&").first).description
        _ = try await h.bus.send(AuthInterface.ResetPassword(resetToken: token, newPassword: "brand new pass"))
        _ = try await h.bus.send(AuthInterface.SignIn(email: "ada@example.com", password: "brand new pass"))
    }

    @Test func withoutATemplateThereIsNoLink() async throws {
        let h = try await PluginHarness.make { clock in [try AuthPlugin.testing(clock: clock)] }
        #expect(try await issue(h).resetLink == nil)
    }

    @Test func aTemplateMustBeAnAbsoluteLinkWithTheTokenInIt() throws {
        #expect(try ResetLinkTemplate("myapp://reset/{token}").link(for: "abc_-1") == "myapp://reset/abc_-1")
        #expect(throws: InvalidResetLinkTemplate("must contain {token}, where the reset token goes")) { try ResetLinkTemplate("https://app.example.com/reset") }
        #expect(throws: InvalidResetLinkTemplate.self) { try ResetLinkTemplate("/reset?token={token}") }
        #expect(throws: InvalidResetLinkTemplate.self) { try ResetLinkTemplate("https://app.example.com/reset?token={token} ") }
        #expect(throws: InvalidResetLinkTemplate.self) { try ResetLinkTemplate("1app://{token}") }
    }
}
