#!/usr/bin/env python3
"""Writes AppStoreChains.swift: throwaway certificate chains shaped like Apple's App Store
signing chain (root → intermediate with 1.2.840.113635.100.6.2.1 → leaf with
1.2.840.113635.100.6.11.1, all P-256), and hostile variants, as fixtures for the payments
tests. Run it again to make new ones (needs python3-cryptography):
    python3 Tests/Interop/make_appstore_chains.py Tests/PaymentsTests/AppStoreChains.swift"""
import datetime, sys
from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

LEAF_OID = x509.ObjectIdentifier("1.2.840.113635.100.6.11.1")
INTER_OID = x509.ObjectIdentifier("1.2.840.113635.100.6.2.1")
NULL = b"\x05\x00"
LONG = (datetime.datetime(2025, 1, 1), datetime.datetime(2045, 1, 1))
PAST = (datetime.datetime(2020, 1, 1), datetime.datetime(2021, 1, 1))


def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "appd tests")])


def cert(subject, key, issuer, issuer_key, ca, oid=None, validity=LONG):
    b = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer)).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(validity[0]).not_valid_after(validity[1])
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False, data_encipherment=False,
                                      key_agreement=False, key_cert_sign=ca, crl_sign=ca, encipher_only=False, decipher_only=False), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if issuer_key is not key:
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    if oid is not None:
        b = b.add_extension(x509.UnrecognizedExtension(oid, NULL), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def pem(c):
    return c.public_bytes(serialization.Encoding.PEM).decode()


def key_pem(k):
    return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


keys = {n: ec.generate_private_key(ec.SECP256R1()) for n in ["root", "inter", "leaf", "otherRoot", "otherInter", "otherLeaf", "plainLeaf",
                                                            "expiredInter", "underExpiredLeaf", "plainInter", "underPlainLeaf"]}
k = keys
root = cert("Test Root CA - G3", k["root"], "Test Root CA - G3", k["root"], True)
inter = cert("Test WWDR CA - G6", k["inter"], "Test Root CA - G3", k["root"], True, INTER_OID)
leaf = cert("Test App Store Signing", k["leaf"], "Test WWDR CA - G6", k["inter"], False, LEAF_OID)
other_root = cert("Test Root CA - G3", k["otherRoot"], "Test Root CA - G3", k["otherRoot"], True)  # the same name, another key
other_inter = cert("Test WWDR CA - G6", k["otherInter"], "Test Root CA - G3", k["otherRoot"], True, INTER_OID)
other_leaf = cert("Test App Store Signing", k["otherLeaf"], "Test WWDR CA - G6", k["otherInter"], False, LEAF_OID)
plain_leaf = cert("Test Plain Leaf", k["plainLeaf"], "Test WWDR CA - G6", k["inter"], False)
expired_inter = cert("Test Expired WWDR", k["expiredInter"], "Test Root CA - G3", k["root"], True, INTER_OID, PAST)
under_expired = cert("Test Leaf Under Expired", k["underExpiredLeaf"], "Test Expired WWDR", k["expiredInter"], False, LEAF_OID)
plain_inter = cert("Test Plain Intermediate", k["plainInter"], "Test Root CA - G3", k["root"], True)
under_plain = cert("Test Leaf Under Plain", k["underPlainLeaf"], "Test Plain Intermediate", k["plainInter"], False, LEAF_OID)

chains = {
    "good": (leaf, inter, root, "leaf"),
    "otherRoot": (other_leaf, other_inter, other_root, "otherLeaf"),
    "leafWithoutOID": (plain_leaf, inter, root, "plainLeaf"),
    "expiredIntermediate": (under_expired, expired_inter, root, "underExpiredLeaf"),
    "intermediateWithoutOID": (under_plain, plain_inter, root, "underPlainLeaf"),
}
def block(text, indent):
    """A multi-line literal as swift format lays it out: its lines and closing quotes indented."""
    quotes = '"' * 3
    return quotes + "\n" + "".join(indent + line + "\n" for line in text.splitlines()) + indent + quotes


out = ["// SPDX-License-Identifier: Apache-2.0", "// Made by Tests/Interop/make_appstore_chains.py; do not edit by hand.", "",
       "/// Throwaway chains shaped like the App Store's signing chain (and hostile variants).",
       "enum AppStoreChains {", f"    static let trustedRoot = {block(pem(root), ' ' * 8)}", ""]
for label, (l, i, r, key) in chains.items():
    out.append(f"    static let {label} = Chain(")
    out.append(f"        leaf: {block(pem(l), ' ' * 12)},")
    out.append(f"        intermediate: {block(pem(i), ' ' * 12)},")
    out.append(f"        root: {block(pem(r), ' ' * 12)},")
    out.append(f"        key: {block(key_pem(k[key]), ' ' * 12)})")
    out.append("")
out.append("}")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
