// SPDX-License-Identifier: Apache-2.0
/// The product version, shown by `--version`, `GetInfo` and `Status`.
public enum Version {
    public static let current = "0.1.0"
}
