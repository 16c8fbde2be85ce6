// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// Writes straight to stdout (fd 1), unbuffered, so streamed output appears at once even when
/// piped, and no shared `FILE*` is touched. Shadows Swift's `print` inside appctl.
func print(_ text: String, terminator: String = "\n") {
    FileDescriptorWriter.writeAll(1, Array((text + terminator).utf8))
}
