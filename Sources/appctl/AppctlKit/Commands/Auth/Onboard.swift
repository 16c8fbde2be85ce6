// SPDX-License-Identifier: Apache-2.0
import Contracts

struct Onboard: SimpleCall {
    static let path = ["onboard"]
    static let abstract = "Mark onboarding complete for the signed-in account."
    static let method = AuthInterface.CompleteOnboarding.method
}
