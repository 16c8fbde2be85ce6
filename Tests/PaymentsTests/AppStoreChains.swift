// SPDX-License-Identifier: Apache-2.0
// Made by Tests/Interop/make_appstore_chains.py; do not edit by hand.

/// Throwaway chains shaped like the App Store's signing chain (and hostile variants).
enum AppStoreChains {
    static let trustedRoot = """
        -----BEGIN CERTIFICATE-----
        MIIBpjCCAUygAwIBAgIUMlMaj/0iT3RCUuFNW2sllAF4Hw0wCgYIKoZIzj0EAwIw
        MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
        dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
        ZXN0IFJvb3QgQ0EgLSBHMzETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
        AgEGCCqGSM49AwEHA0IABAYOFSZ9m/w3J2JLH4XjzbS2BDX9dvWZi0T4+6DWiYwo
        D0Obs3iEytlL1ofCbWyIWHuwO5bMBndq9uFrm5sU+bOjQjBAMA8GA1UdEwEB/wQF
        MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBS4GRAZc19mC5sxP7jVE98e
        mIAO4TAKBggqhkjOPQQDAgNIADBFAiEA4zkN/LnJzy8YqctAq3p6oCwIFNq4Cpjy
        ASJUuhnN9IUCIHYTdQm+WLxQyDSZZkoQSOQo9ElGts70WVlwOlmpakHf
        -----END CERTIFICATE-----
        """

    static let good = Chain(
        leaf: """
            -----BEGIN CERTIFICATE-----
            MIIB3DCCAYGgAwIBAgIUVDdHqymQaOMfBz9Zb54Z+nuM8DkwCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBXV0RSIENBIC0gRzYxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjA2MR8wHQYDVQQDDBZU
            ZXN0IEFwcCBTdG9yZSBTaWduaW5nMRMwEQYDVQQKDAphcHBkIHRlc3RzMFkwEwYH
            KoZIzj0CAQYIKoZIzj0DAQcDQgAEu/LG4+PdZchR4LnlARjL+v7abEF3WesnxWot
            0PQanKf6gcFvYSN4xX561RPcTMt34124LnIEKAT2uNeesll+U6NyMHAwDAYDVR0T
            AQH/BAIwADAOBgNVHQ8BAf8EBAMCB4AwHQYDVR0OBBYEFNgQeVFHzbKhJYRRBR7d
            k0TKvb35MB8GA1UdIwQYMBaAFPmNxqQVYVH2K8oPGPbDr/k/ijUHMBAGCiqGSIb3
            Y2QGCwEEAgUAMAoGCCqGSM49BAMCA0kAMEYCIQD2GL+s7SvN3/Ch5P1YY0SCKXoK
            QwdOyqGMQNStlSIGZAIhAOImQSVTeJSvPHYS4fov+ZfyqHB6CjIjrz11FiPAznbj
            -----END CERTIFICATE-----
            """,
        intermediate: """
            -----BEGIN CERTIFICATE-----
            MIIB2TCCAX+gAwIBAgIUIlqwL7zsot20wuaU4C0+uPfwejEwCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFdXRFIgQ0EgLSBHNjETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABEExbknzeD6HIA+Nypha6ytMgY+npeEqS6yCtKoKB3wE
            VtvDqdAO1DVN8oqQGDXgxm7Pr6+IbEQrH5qZCH5htTKjdTBzMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBT5jcakFWFR9ivKDxj2w6/5
            P4o1BzAfBgNVHSMEGDAWgBS4GRAZc19mC5sxP7jVE98emIAO4TAQBgoqhkiG92Nk
            BgIBBAIFADAKBggqhkjOPQQDAgNIADBFAiEAxMczcpUMsVRwKg2hHP2CVWgYU8q/
            bqdVExC4Yq+D7ZUCIE7vCK+fXfTxvWJetjubnwuDfESLSSDno9ryQroq0yJL
            -----END CERTIFICATE-----
            """,
        root: """
            -----BEGIN CERTIFICATE-----
            MIIBpjCCAUygAwIBAgIUMlMaj/0iT3RCUuFNW2sllAF4Hw0wCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFJvb3QgQ0EgLSBHMzETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABAYOFSZ9m/w3J2JLH4XjzbS2BDX9dvWZi0T4+6DWiYwo
            D0Obs3iEytlL1ofCbWyIWHuwO5bMBndq9uFrm5sU+bOjQjBAMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBS4GRAZc19mC5sxP7jVE98e
            mIAO4TAKBggqhkjOPQQDAgNIADBFAiEA4zkN/LnJzy8YqctAq3p6oCwIFNq4Cpjy
            ASJUuhnN9IUCIHYTdQm+WLxQyDSZZkoQSOQo9ElGts70WVlwOlmpakHf
            -----END CERTIFICATE-----
            """,
        key: """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgL6hqXjRGoDQjHlnT
            +5LscDA6ByVeIr4REdTPRHw87t2hRANCAAS78sbj491lyFHgueUBGMv6/tpsQXdZ
            6yfFai3Q9Bqcp/qBwW9hI3jFfnrVE9xMy3fjXbgucgQoBPa4156yWX5T
            -----END PRIVATE KEY-----
            """)

    static let otherRoot = Chain(
        leaf: """
            -----BEGIN CERTIFICATE-----
            MIIB2zCCAYGgAwIBAgIUUG4NwYEWDL6+5gdt1eRtpnCOb7MwCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBXV0RSIENBIC0gRzYxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjA2MR8wHQYDVQQDDBZU
            ZXN0IEFwcCBTdG9yZSBTaWduaW5nMRMwEQYDVQQKDAphcHBkIHRlc3RzMFkwEwYH
            KoZIzj0CAQYIKoZIzj0DAQcDQgAERigwab6cfMoYTkS8YE8XQsFZechWdByPc4qg
            jlMJed+XUFLjxZDNhzbpbVohgZKJI0BK9XmwFJoPfggB8INOsqNyMHAwDAYDVR0T
            AQH/BAIwADAOBgNVHQ8BAf8EBAMCB4AwHQYDVR0OBBYEFBF/iYc1XXDNllRr/snU
            LQ7kBbyuMB8GA1UdIwQYMBaAFOOQoSkfjF4hmVRV4poKCIVXACWFMBAGCiqGSIb3
            Y2QGCwEEAgUAMAoGCCqGSM49BAMCA0gAMEUCIQC0FYWKYQ9NKv9A8ggJROIgV4oF
            SU61HF1TwcpH0ikxWgIgNvWDtCL0+tnbDfunDJ4Qgx6mfFpv5uWSlZoAzPOXjAQ=
            -----END CERTIFICATE-----
            """,
        intermediate: """
            -----BEGIN CERTIFICATE-----
            MIIB2TCCAX+gAwIBAgIUIeKzgncHGjtjF/3F8+H1SepLGVQwCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFdXRFIgQ0EgLSBHNjETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABOjQuL+vZ8hKZvx976BTzUnoXl2PbI5bMuj6NffHWzg5
            1xdSqdSnADNxDkINo489ZfZ75lK6UIi2xBULT+zFf8SjdTBzMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBTjkKEpH4xeIZlUVeKaCgiF
            VwAlhTAfBgNVHSMEGDAWgBR6HTHcnB038gRHja/9A5Qm1rLMPzAQBgoqhkiG92Nk
            BgIBBAIFADAKBggqhkjOPQQDAgNIADBFAiBg+M7eIIa+rWVxSonXXTnJuvHyw88X
            Z52fqzyVn3Q6DgIhAMXQEWqgiBaI84jxg2+lYR5JKRcTB1T6ipnz9j/0HVbV
            -----END CERTIFICATE-----
            """,
        root: """
            -----BEGIN CERTIFICATE-----
            MIIBpjCCAUygAwIBAgIUI3sZJFlbfl5aOjb0mNJR5ZypVeswCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFJvb3QgQ0EgLSBHMzETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABHyWCYlXrErKUiQqDnfCoIyY1EEXAvG74elv2GN6klIF
            N1dBXvqUHw5FqWgCPqnEN82sY/nHTNVb2YkLvXASSUCjQjBAMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBR6HTHcnB038gRHja/9A5Qm
            1rLMPzAKBggqhkjOPQQDAgNIADBFAiEA2s0JjRIrSPjo1eNACzmvsTMzSVOvhQWB
            4J/XdWpyxiACICwiqaEg4PNOZCXArvWENyNyjiimsGOtLhGaOTHAJJZ3
            -----END CERTIFICATE-----
            """,
        key: """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgCX9TpJ3Q8UebAA+5
            mXt4VTHPXoTDXIU+U8ruzGGtBOuhRANCAARGKDBpvpx8yhhORLxgTxdCwVl5yFZ0
            HI9ziqCOUwl535dQUuPFkM2HNultWiGBkokjQEr1ebAUmg9+CAHwg06y
            -----END PRIVATE KEY-----
            """)

    static let leafWithoutOID = Chain(
        leaf: """
            -----BEGIN CERTIFICATE-----
            MIIBwjCCAWigAwIBAgIUA5q6zlKufxchf7WitLjBwa1yJUgwCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBXV0RSIENBIC0gRzYxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAvMRgwFgYDVQQDDA9U
            ZXN0IFBsYWluIExlYWYxEzARBgNVBAoMCmFwcGQgdGVzdHMwWTATBgcqhkjOPQIB
            BggqhkjOPQMBBwNCAARW/Q3H1W3Ups2bmRxqYV4huKxQu54Lws3lvkRxAn0eR9cs
            slSmp27Ogu+qM+wanSPx/Vp+bDOauFWs3uXos56yo2AwXjAMBgNVHRMBAf8EAjAA
            MA4GA1UdDwEB/wQEAwIHgDAdBgNVHQ4EFgQUYutd+yyL6Y2AsFm5FtJIh38ghhcw
            HwYDVR0jBBgwFoAU+Y3GpBVhUfYryg8Y9sOv+T+KNQcwCgYIKoZIzj0EAwIDSAAw
            RQIhAJt9sxE58arsMNZh7OHv4e1W2U7O9dczVT1ThRhOe/TIAiBdFYldLbYBX81X
            WR3VGl8H03YXEAC6CE3cyfPkuE6dyQ==
            -----END CERTIFICATE-----
            """,
        intermediate: """
            -----BEGIN CERTIFICATE-----
            MIIB2TCCAX+gAwIBAgIUIlqwL7zsot20wuaU4C0+uPfwejEwCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFdXRFIgQ0EgLSBHNjETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABEExbknzeD6HIA+Nypha6ytMgY+npeEqS6yCtKoKB3wE
            VtvDqdAO1DVN8oqQGDXgxm7Pr6+IbEQrH5qZCH5htTKjdTBzMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBT5jcakFWFR9ivKDxj2w6/5
            P4o1BzAfBgNVHSMEGDAWgBS4GRAZc19mC5sxP7jVE98emIAO4TAQBgoqhkiG92Nk
            BgIBBAIFADAKBggqhkjOPQQDAgNIADBFAiEAxMczcpUMsVRwKg2hHP2CVWgYU8q/
            bqdVExC4Yq+D7ZUCIE7vCK+fXfTxvWJetjubnwuDfESLSSDno9ryQroq0yJL
            -----END CERTIFICATE-----
            """,
        root: """
            -----BEGIN CERTIFICATE-----
            MIIBpjCCAUygAwIBAgIUMlMaj/0iT3RCUuFNW2sllAF4Hw0wCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFJvb3QgQ0EgLSBHMzETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABAYOFSZ9m/w3J2JLH4XjzbS2BDX9dvWZi0T4+6DWiYwo
            D0Obs3iEytlL1ofCbWyIWHuwO5bMBndq9uFrm5sU+bOjQjBAMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBS4GRAZc19mC5sxP7jVE98e
            mIAO4TAKBggqhkjOPQQDAgNIADBFAiEA4zkN/LnJzy8YqctAq3p6oCwIFNq4Cpjy
            ASJUuhnN9IUCIHYTdQm+WLxQyDSZZkoQSOQo9ElGts70WVlwOlmpakHf
            -----END CERTIFICATE-----
            """,
        key: """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgf31b0dNsxfPh8DhA
            bp3mpY1r3QN6xPZrdiejebQB4bmhRANCAARW/Q3H1W3Ups2bmRxqYV4huKxQu54L
            ws3lvkRxAn0eR9csslSmp27Ogu+qM+wanSPx/Vp+bDOauFWs3uXos56y
            -----END PRIVATE KEY-----
            """)

    static let expiredIntermediate = Chain(
        leaf: """
            -----BEGIN CERTIFICATE-----
            MIIB3TCCAYKgAwIBAgIUdB9MRxHWJYjMIr0hMlXnN2bAk70wCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBFeHBpcmVkIFdXRFIxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjA3MSAwHgYDVQQDDBdU
            ZXN0IExlYWYgVW5kZXIgRXhwaXJlZDETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMG
            ByqGSM49AgEGCCqGSM49AwEHA0IABODkNnz3rWk3VAdFpqVIj+bZrYVZAXDxWEev
            dh3EFP1O7G8IXawVYGeZlVuf5NrbPJKpANh5awvHDYmW8F/U5AmjcjBwMAwGA1Ud
            EwEB/wQCMAAwDgYDVR0PAQH/BAQDAgeAMB0GA1UdDgQWBBRe54wJ30uLVIgS5R0I
            /yeutn0+vzAfBgNVHSMEGDAWgBQNjcp2kwrAurpqzim9vAfVmAwzdTAQBgoqhkiG
            92NkBgsBBAIFADAKBggqhkjOPQQDAgNJADBGAiEAzSPZxndH5/9/rfl1OgGWI8Wd
            V8rVE5iH5Fi9evY0dyQCIQCWkbG4RHE6PYbvwuJYVt1SCLm2L/FsWeGZH4/g0y7N
            3w==
            -----END CERTIFICATE-----
            """,
        intermediate: """
            -----BEGIN CERTIFICATE-----
            MIIB2jCCAX+gAwIBAgIULDXn6bCasnyYuIauj7jBeae9EP4wCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjAwMTAxMDAwMDAwWhcNMjEwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IEV4cGlyZWQgV1dEUjETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABMHCun7F4uUO5PUGfIpAYthLyui/akZ0dTMpKLzfVYTQ
            SqC2e+5rnJ3y99cYdDG6fx063ZHxMua93WJXEQdGbTKjdTBzMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBQNjcp2kwrAurpqzim9vAfV
            mAwzdTAfBgNVHSMEGDAWgBS4GRAZc19mC5sxP7jVE98emIAO4TAQBgoqhkiG92Nk
            BgIBBAIFADAKBggqhkjOPQQDAgNJADBGAiEAs1vuOy3Vww5rM8wW8LoR0LjHXDZk
            fIKjYRifbw5lOA8CIQDsIgeRwlyzlHXEIJR1pfES7iYE2ivrJxINnEMVzr5otw==
            -----END CERTIFICATE-----
            """,
        root: """
            -----BEGIN CERTIFICATE-----
            MIIBpjCCAUygAwIBAgIUMlMaj/0iT3RCUuFNW2sllAF4Hw0wCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFJvb3QgQ0EgLSBHMzETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABAYOFSZ9m/w3J2JLH4XjzbS2BDX9dvWZi0T4+6DWiYwo
            D0Obs3iEytlL1ofCbWyIWHuwO5bMBndq9uFrm5sU+bOjQjBAMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBS4GRAZc19mC5sxP7jVE98e
            mIAO4TAKBggqhkjOPQQDAgNIADBFAiEA4zkN/LnJzy8YqctAq3p6oCwIFNq4Cpjy
            ASJUuhnN9IUCIHYTdQm+WLxQyDSZZkoQSOQo9ElGts70WVlwOlmpakHf
            -----END CERTIFICATE-----
            """,
        key: """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgal6CI2ODybrNJiBO
            Re46/sKOvEg7bJLkFBpyoFHcBQGhRANCAATg5DZ8961pN1QHRaalSI/m2a2FWQFw
            8VhHr3YdxBT9TuxvCF2sFWBnmZVbn+Ta2zySqQDYeWsLxw2JlvBf1OQJ
            -----END PRIVATE KEY-----
            """)

    static let intermediateWithoutOID = Chain(
        leaf: """
            -----BEGIN CERTIFICATE-----
            MIIB4DCCAYagAwIBAgIUArNwbiPyuYEZfLaq814dxutlMrowCgYIKoZIzj0EAwIw
            NzEgMB4GA1UEAwwXVGVzdCBQbGFpbiBJbnRlcm1lZGlhdGUxEzARBgNVBAoMCmFw
            cGQgdGVzdHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjA1MR4wHAYD
            VQQDDBVUZXN0IExlYWYgVW5kZXIgUGxhaW4xEzARBgNVBAoMCmFwcGQgdGVzdHMw
            WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARLgYCOlaCbAZMdrfcCLfQiaRnQ2xH9
            a2DkOQinaBEwNBq5ntvDaoG8Sifwq1ZXmvjyMIRstUWiO2i8+OcKtdzAo3IwcDAM
            BgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIHgDAdBgNVHQ4EFgQUudA8gr+nbvtY
            UBCiZIUfLtKR3FEwHwYDVR0jBBgwFoAUd1rOlvw4ZkSvYPfyxF1+lFus2XUwEAYK
            KoZIhvdjZAYLAQQCBQAwCgYIKoZIzj0EAwIDSAAwRQIhAKAi8kVQd20LjXl/X54a
            P26UBa2SYRMRKbue30pTayfzAiAturf1k9NNAkGxq3wum+q7W1s7fJSGqeaBJjwJ
            879XxA==
            -----END CERTIFICATE-----
            """,
        intermediate: """
            -----BEGIN CERTIFICATE-----
            MIIBzjCCAXOgAwIBAgIUXYX91ukAo+3zAYzh3whfiFMy0KYwCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjA3MSAwHgYDVQQDDBdU
            ZXN0IFBsYWluIEludGVybWVkaWF0ZTETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMG
            ByqGSM49AgEGCCqGSM49AwEHA0IABG+FpM0wY5wsyGEGgYNAQdvc9w0dL0cWjJ9y
            g5NsGGCCwZs8m/joYKghK9Ft42okcgKwXP8wcwUj68TMDsBOmK+jYzBhMA8GA1Ud
            EwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBR3Ws6W/DhmRK9g
            9/LEXX6UW6zZdTAfBgNVHSMEGDAWgBS4GRAZc19mC5sxP7jVE98emIAO4TAKBggq
            hkjOPQQDAgNJADBGAiEA+KXP5A3eobayZxLVJKAndIJLkNb3aM/nE5KJCNP5ZCUC
            IQCe8mm1cBeuatUlq0yEpMDoXOcMVyGvjP4tvlIuA58b6A==
            -----END CERTIFICATE-----
            """,
        root: """
            -----BEGIN CERTIFICATE-----
            MIIBpjCCAUygAwIBAgIUMlMaj/0iT3RCUuFNW2sllAF4Hw0wCgYIKoZIzj0EAwIw
            MTEaMBgGA1UEAwwRVGVzdCBSb290IENBIC0gRzMxEzARBgNVBAoMCmFwcGQgdGVz
            dHMwHhcNMjUwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjAxMRowGAYDVQQDDBFU
            ZXN0IFJvb3QgQ0EgLSBHMzETMBEGA1UECgwKYXBwZCB0ZXN0czBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABAYOFSZ9m/w3J2JLH4XjzbS2BDX9dvWZi0T4+6DWiYwo
            D0Obs3iEytlL1ofCbWyIWHuwO5bMBndq9uFrm5sU+bOjQjBAMA8GA1UdEwEB/wQF
            MAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBS4GRAZc19mC5sxP7jVE98e
            mIAO4TAKBggqhkjOPQQDAgNIADBFAiEA4zkN/LnJzy8YqctAq3p6oCwIFNq4Cpjy
            ASJUuhnN9IUCIHYTdQm+WLxQyDSZZkoQSOQo9ElGts70WVlwOlmpakHf
            -----END CERTIFICATE-----
            """,
        key: """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgGAoGS9y2xerK5643
            e5NNnSYeYZW+joVEYvpdHhbQjimhRANCAARLgYCOlaCbAZMdrfcCLfQiaRnQ2xH9
            a2DkOQinaBEwNBq5ntvDaoG8Sifwq1ZXmvjyMIRstUWiO2i8+OcKtdzA
            -----END PRIVATE KEY-----
            """)

}
