"""
Self-signed certificates for development-mode webhook servers.

The certificate is its own CA: apiservers (and ``curl --cacert``) trust it directly.
It is shaped to satisfy both OpenSSL (Python's ssl) and Go's strict TLS (apiservers):
the names are in the SubjectAltName (Go ignores the Common Name), IP addresses are
IP-typed SANs, the CA flag and key usages allow it both to sign and to serve.

``cryptography`` is not a runtime dependency of the framework, only of the ``dev`` extra,
so it is imported lazily, when a certificate is actually needed.

Why ``kopf_sim.transports.certs`` makes certificates of its own: the two packages may not import each other
(kopf must run without the simulator, the simulator serves any client), and the two jobs differ.
This one is the framework's documented contract (``WebhookServer.build_certificate``): one
self-signed certificate that is its own CA (the webhook configurations' ``caBundle``), with the
operator's host and address, an optional password for the key, and ``cryptography`` optional.
The simulator's is a CA and a server certificate for loopback HTTPS, trusted by kubectl and
client-go through a kubeconfig, with ``cryptography`` a plain import. What they share is only
``cryptography``'s builder, which is the library made for the job.
"""

from __future__ import annotations

import datetime
import importlib
import ipaddress
from collections.abc import Iterable
from types import ModuleType

#: How far back the validity starts, to tolerate the clocks that are slightly off (e.g. in VMs).
CLOCK_SKEW = datetime.timedelta(hours=1)

#: How long the generated certificates are valid (they are re-generated on every start anyway).
VALIDITY = datetime.timedelta(days=365)

#: Addresses that are for listening only, never for connecting, so they are useless in certificates.
_WILDCARD_IPS = frozenset({ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::")})


class MissingDependencyError(ImportError):
    """An optional dependency (an extra) is needed for the requested mode, but it is not installed."""


def import_optional(module: str, *, purpose: str, install: str) -> ModuleType:
    """Import an optional dependency, or fail with an explanation of what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(
            f"{purpose} requires the {module.split('.')[0]!r} package, which is not installed. "
            f"Install it with: {install}"
        ) from e


def require_cryptography() -> None:
    """Fail early (at startup) with an explanation if the certificates cannot be generated."""
    import_optional(
        "cryptography",
        purpose="Generating self-signed certificates for webhook servers",
        install="pip install kopf[dev]  (or provide certfile= & pkeyfile=, or use insecure=True)",
    )


def split_hostnames(
    hostnames: Iterable[str | None],
) -> tuple[list[str], list[ipaddress.IPv4Address | ipaddress.IPv6Address]]:
    """
    Split the names into DNS names & IP addresses, normalised and deduplicated, in their order.

    IPv6 addresses can come in brackets (as in URLs). Wildcard addresses (``0.0.0.0``, ``::``)
    are dropped: they are for listening, not for connecting.
    """
    names: list[str] = []
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for hostname in hostnames:
        if not hostname:
            continue
        candidate = hostname.strip()
        if candidate.startswith("[") and candidate.endswith("]"):
            candidate = candidate[1:-1]
        try:
            ip = ipaddress.ip_address(candidate)
        except ValueError:
            name = candidate.lower().rstrip(".")
            if name and name not in names:
                names.append(name)
        else:
            if ip not in _WILDCARD_IPS and ip not in ips:
                ips.append(ip)
    return names, ips


def build_self_signed(
    hostnames: Iterable[str | None],
    *,
    now: datetime.datetime,
    password: str | None = None,
) -> tuple[bytes, bytes]:
    """
    Build a self-signed certificate (also usable as its own CA) with the hostnames as SANs.

    The first DNS name becomes the Common Name; if there are none, the first IP address.
    Returns the PEM-encoded certificate and private key (encrypted if a password is given).
    """
    names, ips = split_hostnames(hostnames)
    if not names and not ips:
        raise ValueError("A certificate needs at least one hostname or a non-wildcard IP address.")

    require_cryptography()
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    common_name = names[0] if names else str(ips[0])
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    sans += [x509.IPAddress(ip) for ip in ips]
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    key_usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    # Usable as a server certificate; also as a client one (e.g. for testing the client verification).
    usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    now = now if now.tzinfo is not None else now.replace(tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(key_usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )

    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode("utf-8")) if password else serialization.NoEncryption()
    )
    cert_pem: bytes = cert.public_bytes(serialization.Encoding.PEM)
    pkey_pem: bytes = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return cert_pem, pkey_pem
