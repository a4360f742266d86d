"""A private PKI for a secure Flower deployment: CA, SuperLink certificate, SuperNode keys.

Flower 1.42 secures a deployment with two independent mechanisms, and this module makes the
files both need, with Python's ``cryptography`` package (installed with Flower):

* **TLS** between SuperNodes (and the ``flwr`` CLI) and the SuperLink: a private certificate
  authority (:func:`make_ca`) signs the SuperLink's server certificate
  (:func:`make_server_cert`), whose subject alternative names must list every address
  clients dial (an IP SAN for ``127.0.0.1``, a DNS SAN for ``localhost`` ...). The SuperLink
  gets ``--ssl-ca-certfile``, ``--ssl-certfile``, ``--ssl-keyfile``; clients get the CA
  certificate as ``--root-certificates`` (SuperNodes) or ``root-certificates`` in the
  connection of ``$FLWR_HOME/config.toml`` (``flwr``).
* **SuperNode authentication** (SuperLink flag ``--enable-supernode-auth``): each SuperNode
  holds an ECDSA key on a NIST curve (P-384 here, :func:`make_node_key`); the private key in
  OpenSSH format goes to ``flower-supernode --auth-supernode-private-key``, the public key
  (OpenSSH one-line format) is registered with ``flwr supernode register <key.pub>``.
  Unregistered keys are refused.

Private keys are written with mode 0600. Nothing here talks to Flower; it only writes files.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Curve of every key made here (Flower accepts NIST curves for node authentication).
CURVE = ec.SECP384R1
#: Validity of the certificates, in days (default of every function here).
DAYS = 365


@dataclass(frozen=True)
class NodeKey:
    """One SuperNode's key pair on disk.

    Attributes
    ----------
    private : Path
        OpenSSH-format private key (``--auth-supernode-private-key``).
    public : Path
        OpenSSH one-line public key (``flwr supernode register``).
    """

    private: Path
    public: Path


@dataclass(frozen=True)
class Pki:
    """The files of a secure deployment.

    Attributes
    ----------
    ca_cert, ca_key : Path
        The private CA (``--ssl-ca-certfile``, ``--root-certificates``); keep its key offline.
    server_cert, server_key : Path
        The SuperLink's certificate and key (``--ssl-certfile``, ``--ssl-keyfile``).
    nodes : tuple of NodeKey
        One key pair per SuperNode, in partition order.
    """

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    nodes: tuple[NodeKey, ...]


def _write_private(path: Path, data: bytes) -> Path:
    """Write ``data`` readable by the owner only (the file is created 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey, days: int
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))  # tolerate small clock skew
        .not_valid_after(now + dt.timedelta(days=days))
    )


def make_ca(
    directory: Path, name: str = "fl-r2sp private CA", days: int = DAYS
) -> tuple[Path, Path]:
    """Create a self-signed CA: ``ca.crt`` and ``ca.key`` in ``directory``.

    Parameters
    ----------
    directory : Path
        Output folder (created if missing).
    name : str (default: "fl-r2sp private CA")
        The CA's common name.
    days : int (default: 365)
        Validity.

    Returns
    -------
    tuple of Path
        (certificate, private key).
    """
    key = ec.generate_private_key(CURVE())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (
        _builder(subject, subject, key.public_key(), days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA384())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path = directory / "ca.crt"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, _write_private(directory / "ca.key", _pem_key(key))


def make_server_cert(
    ca_cert: Path,
    ca_key: Path,
    directory: Path,
    ips: Sequence[str] = ("127.0.0.1",),
    dns: Sequence[str] = ("localhost",),
    days: int = DAYS,
    stem: str = "superlink",
) -> tuple[Path, Path]:
    """A server certificate signed by the CA, valid for ``ips`` and ``dns`` names.

    Parameters
    ----------
    ca_cert, ca_key : Path
        The signing CA (from :func:`make_ca`).
    directory : Path
        Output folder.
    ips : sequence of str (default: ("127.0.0.1",))
        IP subject alternative names: every address clients dial.
    dns : sequence of str (default: ("localhost",))
        DNS subject alternative names.
    days : int (default: 365)
        Validity.
    stem : str (default: "superlink")
        File names ``<stem>.crt`` and ``<stem>.key``.

    Raises
    ------
    ValueError
        If no name is given or an IP address does not parse.
    """
    if not ips and not dns:
        raise ValueError("a server certificate needs at least one IP or DNS name")
    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{ca_key} is not an EC private key")
    key = ec.generate_private_key(CURVE())
    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    names += [x509.DNSName(d) for d in dns]
    common = (list(dns) + list(ips))[0]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])
    cert = (
        _builder(subject, ca.subject, key.public_key(), days)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False
        )
        .sign(signer, hashes.SHA384())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path = directory / f"{stem}.crt"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, _write_private(directory / f"{stem}.key", _pem_key(key))


def make_node_key(directory: Path, name: str) -> NodeKey:
    """An ECDSA P-384 key pair for one SuperNode: ``<name>.key`` and ``<name>.pub``."""
    key = ec.generate_private_key(CURVE())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    priv_path = _write_private(directory / f"{name}.key", private)
    pub_path = directory / f"{name}.pub"
    pub_path.write_bytes(public + f" {name}\n".encode())
    return NodeKey(priv_path, pub_path)


def make_pki(
    directory: Path,
    num_nodes: int,
    ips: Sequence[str] = ("127.0.0.1",),
    dns: Sequence[str] = ("localhost",),
    days: int = DAYS,
) -> Pki:
    """CA, SuperLink certificate and ``num_nodes`` SuperNode keys (``node-<i>``) in ``directory``.

    Raises
    ------
    ValueError
        If ``num_nodes`` is negative (or as :func:`make_server_cert`).
    """
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be >= 0, got {num_nodes}")
    ca_cert, ca_key = make_ca(directory, days=days)
    cert, key = make_server_cert(ca_cert, ca_key, directory, ips, dns, days)
    nodes = tuple(make_node_key(directory / "nodes", f"node-{i}") for i in range(num_nodes))
    return Pki(ca_cert, ca_key, cert, key, nodes)
