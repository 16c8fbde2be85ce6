#if canImport(Glibc)
import Glibc
#endif

/// Writes straight to stdout (fd 1), unbuffered, so streamed output appears at once even when
/// piped, and no shared `FILE*` is touched. Shadows Swift's `print` inside appctl.
func print(_ text: String, terminator: String = "\n") {
    var bytes = Array((text + terminator).utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
    }
    bytes.removeAll()
}
