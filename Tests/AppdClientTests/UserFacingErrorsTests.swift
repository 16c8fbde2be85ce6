// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import AppdClient
import BusCore
import Contracts

/// Errors an app shows its user: words for people from each error (its own, or its category's
/// from the IDL), the operator's text kept as the failure reason.
@Suite struct UserFacingErrorsTests {
    @Test func aCaseWithWordsOfItsOwnUsesThem() {
        let error: any Error = AuthError.invalidCredentials
        #expect(error.localizedDescription == "The email or password is incorrect.")
        #expect((error as? any LocalizedError)?.recoverySuggestion == "Check them, or reset your password.")
        #expect((error as? any LocalizedError)?.failureReason == AuthError.invalidCredentials.description, "the operator's text stays")
        #expect(TodosError.quotaExceeded(limit: 3).errorDescription == "You have 3 todos, the most an account can keep.")
        #expect(AuthError.onboardingRequired.errorDescription?.contains("appctl") == false, "no operator words for the user")
    }

    @Test func everyOtherCaseUsesItsDeclaredCategory() {
        // AuthError.busy declares 'unavailable', PaymentsError.unknownAccount 'notFound'.
        #expect(ContractCategories.all["io.appd.Auth.Busy"] == .unavailable)
        #expect(AuthError.busy.errorDescription == UserFacingText.generic(.unavailable).message)
        #expect(PaymentsError.unknownAccount(email: "a@b.c").errorDescription == UserFacingText.generic(ContractCategories.all["io.appd.Payments.UnknownAccount"]).message)
        // Every error every contract declares has a category to fall back on.
        let declared = ContractCategories.idls.compactMap { try? VarlinkInterface(parsing: $0) }.flatMap { interface in interface.errors.map { interface.name + "." + $0.name } }
        #expect(declared.count > 40 && Set(declared) == Set(ContractCategories.all.keys), "\(Set(declared).subtracting(ContractCategories.all.keys).sorted())")
    }

    @Test func clientErrorsSpeakToTheUserToo() {
        #expect(AppdClientError.server(status: 429, name: "io.appd.Bus.RateLimited", parameters: [:]).errorDescription == "Too many attempts.")
        #expect(AppdClientError.transport("down").recoverySuggestion == "Check your connection and try again.")
        #expect(AppdClientError.notSignedIn.errorDescription == "You're signed out.")
    }
}
