// SPDX-License-Identifier: Apache-2.0
import Bus
@testable import Files
import Testing

@Suite struct S3SignerTests {
    /// AWS's own worked example ("GET Object", Signature Version 4 for Amazon S3: Authenticating
    /// Requests Using the Authorization Header): the same credentials, time, headers and range
    /// must give the signature AWS documents.
    @Test func theSignatureOfAWSsWorkedExample() throws {
        let signer = S3Signer(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1")
        let time = WallTime(nanosecondsSinceEpoch: 1_369_353_600 * 1_000_000_000)  // 2013-05-24T00:00:00Z
        let headers = signer.sign(
            method: "GET", path: "/test.txt", query: [], headers: [("host", "examplebucket.s3.amazonaws.com"), ("range", "bytes=0-9")], payload: [], at: time)
        let authorization = try #require(headers.first { $0.0 == "Authorization" }?.1)
        #expect(
            authorization == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(headers.contains { $0 == ("x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") })
        #expect(headers.contains { $0 == ("x-amz-date", "20130524T000000Z") })
    }

    /// The worked example of a query: GET Bucket lifecycle (`?lifecycle`, an empty value).
    @Test func aQueryIsSignedSortedAndEncoded() throws {
        let signer = S3Signer(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1")
        let time = WallTime(nanosecondsSinceEpoch: 1_369_353_600 * 1_000_000_000)
        let headers = signer.sign(method: "GET", path: "/", query: [("lifecycle", "")], headers: [("host", "examplebucket.s3.amazonaws.com")], payload: [], at: time)
        #expect(headers.first { $0.0 == "Authorization" }?.1.hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)
        #expect(S3Signer.encode("a b/ü~", slash: true) == "a%20b%2F%C3%BC~" && S3Signer.encode("/files/f_1", slash: false) == "/files/f_1")
    }
}
