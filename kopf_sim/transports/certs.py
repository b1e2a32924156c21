"""Throw-away TLS certificates for serving the simulator over HTTPS on loopback.

A tiny CA signs one server certificate (and client certificates, for users). The CA is what clients trust (it goes into
the kubeconfig's ``certificate-authority-data``). A separate CA is used rather than
a single self-signed certificate because Go's TLS (kubectl, client-go) and OpenSSL
(Python's ssl) are both strict about the shapes they accept: a CA must have
``basicConstraints CA:TRUE`` and ``keyCertSign``; a server certificate must have its
names in the SubjectAltName (the Common Name is ignored) and be usable for serverAuth.

Why not kopf's maker (``kopf._cogs.helpers.certificates``): the simulator knows nothing of kopf
(it serves kubectl and any client; the import contracts keep it so), and that maker has another
job: one self-signed certificate for an operator's webhook server, as kopf's documented API builds
it (its own CA, a password for the key, ``cryptography`` imported only if needed). The two share
only ``cryptography``'s builder, the library made for the job.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateBundle", "generate_self_signed", "sign_client_certificate"]

# Tolerate clocks that are slightly off, e.g. in containers or virtual-time tests.
CLOCK_SKEW = datetime.timedelta(hours=1)


@dataclass(frozen=True)
class CertificateBundle:
    """PEM-encoded: the CA to trust, the server certificate, and the server's private key (and the CA's)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    ca_key_pem: bytes = b""  # to sign client certificates with (see :func:`sign_client_certificate`)


def generate_self_signed(
    hostnames: Sequence[str] = ("localhost",),
    ips: Sequence[str] = ("127.0.0.1",),
    *,
    days: int = 365,
) -> CertificateBundle:
    """Generate a fresh CA and a server certificate for these names & IPs (EC P-256 keys)."""
    if not hostnames and not ips:
        raise ValueError("At least one hostname or IP address is needed.")
    now = datetime.datetime.now(datetime.UTC)
    not_before, not_after = now - CLOCK_SKEW, now + datetime.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kopf-sim CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in hostnames]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    common_name = hostnames[0] if hostnames else ips[0]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    return CertificateBundle(
        ca_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=_private_pem(key),
        ca_key_pem=_private_pem(ca_key),
    )


def sign_client_certificate(
    bundle: CertificateBundle, user: str, groups: Sequence[str] = (), *, days: int = 365
) -> tuple[bytes, bytes]:
    """A client certificate (and its key, PEM) for a user: ``CN=user``, one ``O=group`` per group.

    As the apiserver reads a client certificate signed by its client CA: the common name is the user's
    name, the organizations are the user's groups (``O=system:masters`` makes a cluster-admin).
    """
    if not user:
        raise ValueError("A client certificate needs a user name (its common name).")
    ca_key = serialization.load_pem_private_key(bundle.ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("The bundle has no CA key to sign client certificates with.")
    ca_cert = x509.load_pem_x509_certificate(bundle.ca_pem)
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
    subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _private_pem(key)


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
