// SPDX-License-Identifier: Apache-2.0
import AppctlKit

// appctl's entry point; everything else is in AppctlKit.
Appctl.main()
