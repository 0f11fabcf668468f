/// Compares two strings in time that depends only on their lengths, so a mismatching
/// `state` or `nonce` leaks nothing through timing.
package func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    var left = lhs
    var right = rhs
    return left.withUTF8 { a in
        right.withUTF8 { b in constantTimeEquals(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) }
    }
}

/// The same comparison over bytes.
package func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for index in 0..<max(a.count, b.count) {
        difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
    }
    return difference == 0
}
