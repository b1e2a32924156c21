"""Throw-away certificates: shapes that both OpenSSL (Python) and strict verifiers accept."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID

from kopf_sim.transports.certs import CertificateBundle, generate_self_signed


@pytest.fixture(scope="module")
def bundle() -> CertificateBundle:
    return generate_self_signed(("localhost", "kopf-sim.local"), ("127.0.0.1", "::1"), days=10)


def test_ca_and_server_certificate_shapes(bundle: CertificateBundle) -> None:
    ca = x509.load_pem_x509_certificate(bundle.ca_pem)
    cert = x509.load_pem_x509_certificate(bundle.cert_pem)
    ca_constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert ca_constraints.critical
    assert ca_constraints.value.ca
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.issuer == ca.subject
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", "kopf-sim.local"]
    assert sans.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku
    lifetime = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(days=9) < lifetime <= datetime.timedelta(days=10)
    assert b"PRIVATE KEY" in bundle.key_pem


@pytest.mark.parametrize(
    "subject",
    [
        x509.DNSName("localhost"),
        x509.DNSName("kopf-sim.local"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ],
)
def test_strict_webpki_verification(bundle: CertificateBundle, subject: verification.Subject) -> None:
    # cryptography's verifier follows the CA/B & RFC 5280 profile, as strict as Go's crypto/x509.
    store = verification.Store([x509.load_pem_x509_certificate(bundle.ca_pem)])
    verifier = verification.PolicyBuilder().store(store).build_server_verifier(subject)
    chain = verifier.verify(x509.load_pem_x509_certificate(bundle.cert_pem), [])
    assert len(chain) == 2


def test_strict_verification_rejects_other_names(bundle: CertificateBundle) -> None:
    store = verification.Store([x509.load_pem_x509_certificate(bundle.ca_pem)])
    verifier = verification.PolicyBuilder().store(store).build_server_verifier(x509.DNSName("example.com"))
    with pytest.raises(verification.VerificationError):
        verifier.verify(x509.load_pem_x509_certificate(bundle.cert_pem), [])


def handshake(bundle: CertificateBundle, server_hostname: str) -> None:
    """A TLS handshake over memory buffers between Python's ssl server & client contexts."""
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as tmpdir:
        (Path(tmpdir) / "tls.crt").write_bytes(bundle.cert_pem)
        (Path(tmpdir) / "tls.key").write_bytes(bundle.key_pem)
        server_ctx.load_cert_chain(Path(tmpdir) / "tls.crt", Path(tmpdir) / "tls.key")
    client_ctx = ssl.create_default_context(cadata=bundle.ca_pem.decode())
    client_ctx.verify_flags |= ssl.VERIFY_X509_STRICT

    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=server_hostname)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for name, side in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("The handshake did not complete.")


@pytest.mark.parametrize("hostname", ["localhost", "kopf-sim.local", "127.0.0.1", "::1"])
def test_python_ssl_accepts_the_names(bundle: CertificateBundle, hostname: str) -> None:
    handshake(bundle, hostname)


@pytest.mark.parametrize("hostname", ["example.com", "127.0.0.2"])
def test_python_ssl_rejects_other_names(bundle: CertificateBundle, hostname: str) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(bundle, hostname)


def test_python_ssl_rejects_another_ca(bundle: CertificateBundle) -> None:
    other = generate_self_signed()
    mixed = CertificateBundle(ca_pem=other.ca_pem, cert_pem=bundle.cert_pem, key_pem=bundle.key_pem)
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(mixed, "localhost")


def test_names_are_required() -> None:
    with pytest.raises(ValueError):
        generate_self_signed((), ())
