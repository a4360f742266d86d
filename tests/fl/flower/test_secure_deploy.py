"""The secure deployment's pieces, without starting Flower: PKI files, flags, verdicts."""

from __future__ import annotations

import importlib.util
import ipaddress
import socket
import ssl
import stat
import threading
from pathlib import Path
from types import ModuleType

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_ssh_private_key

from fl_r2sp.fl.flower.pki import make_ca, make_pki
from fl_r2sp.fl.flower.secure_deploy import (
    JOINED_LINE,
    RegistrationGuard,
    intruder_verdicts,
    make_intruders,
    stranger_verdict,
    superlink_security,
    supernode_security,
)
from tests.paths import REPO


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory):
    return make_pki(tmp_path_factory.mktemp("pki"), num_nodes=2)


def load_deploy_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "deploy_local", REPO / "scripts" / "deploy_local.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_server_certificate_names_loopback_and_chains_to_the_ca(pki) -> None:
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    cert = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
    cert.verify_directly_issued_by(ca)  # raises if the signature or issuer is wrong
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert cert.public_key().curve.name == "secp384r1"
    for key in (pki.ca_key, pki.server_key, *(n.private for n in pki.nodes)):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key


def test_node_keys_are_p384_in_the_formats_flower_loads(pki) -> None:
    from flwr.cli.supernode.register import try_load_public_key

    for node in pki.nodes:
        private = load_ssh_private_key(node.private.read_bytes(), None)  # flower-supernode's loader
        assert isinstance(private, ec.EllipticCurvePrivateKey)
        assert private.curve.name == "secp384r1"
        assert try_load_public_key(node.public)  # flwr supernode register's loader
    assert pki.nodes[0].public.read_bytes() != pki.nodes[1].public.read_bytes()


def _tls_handshake(pki, cafile: Path) -> None:
    """Serve one TLS handshake on loopback with the SuperLink's certificate; connect to it."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(cafile=str(cafile))
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            client_ctx.wrap_socket(raw, server_hostname="127.0.0.1"),
        ):
            pass
    finally:
        thread.join(timeout=10)
        listener.close()


def test_tls_to_127_0_0_1_verifies_with_the_ca_and_fails_with_another(pki, tmp_path) -> None:
    _tls_handshake(pki, pki.ca_cert)
    rogue, _ = make_ca(tmp_path, name="rogue CA")
    with pytest.raises(ssl.SSLCertVerificationError):
        _tls_handshake(pki, rogue)


def test_secure_commands_and_connection(pki, tmp_path, monkeypatch) -> None:
    deploy = load_deploy_script()
    link = deploy.superlink_cmd(9091, tmp_path / "state.db", pki)
    assert "--insecure" not in link and "--enable-supernode-auth" in link
    for flag, path in (
        ("--ssl-ca-certfile", pki.ca_cert),
        ("--ssl-certfile", pki.server_cert),
        ("--ssl-keyfile", pki.server_key),
    ):
        assert link[link.index(flag) + 1] == str(path)
    node = deploy.supernode_cmd(9091, 9100, 1, 2, supernode_security(pki.ca_cert, pki.nodes[1]))
    assert node[1:5] == [
        "--root-certificates",
        str(pki.ca_cert),
        "--auth-supernode-private-key",
        str(pki.nodes[1].private),
    ]
    assert superlink_security(None) == ["--insecure"] == supernode_security(None)
    from flwr.cli.flower_config import read_superlink_connection

    deploy.write_flower_config(tmp_path, 9091, pki.ca_cert)
    monkeypatch.setenv("FLWR_HOME", str(tmp_path))
    conn = read_superlink_connection()
    assert conn.address == "127.0.0.1:9091" and not conn.insecure
    assert Path(conn.root_certificates) == pki.ca_cert.resolve()
    with pytest.raises(SystemExit):
        deploy.parse_args(["--intruders"])  # needs --secure


def test_intruders_and_their_verdicts(pki, tmp_path) -> None:
    made = make_intruders(pki, tmp_path / "rogue")
    intruders = {b.name: b.flags for b in made}
    assert list(intruders) == ["insecure", "wrong-ca", "unregistered-key", "no-key", "stranger"]
    assert [b.name for b in made if b.key is not None] == ["stranger"]  # registers itself
    assert intruders["wrong-ca"][1] != str(pki.ca_cert)  # trusts the rogue CA
    assert intruders["wrong-ca"][3] == str(pki.nodes[0].private)  # with a registered key
    assert "--auth-supernode-private-key" not in intruders["no-key"]
    logs = {}
    for name, text in {
        "tls": "ERROR [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed",
        "key": "[code: 2004] Failed to activate SuperNode.",
        "in": f"INFO {JOINED_LINE} 123",
    }.items():
        logs[name] = tmp_path / f"{name}.log"
        logs[name].write_text(text)
    verdicts = intruder_verdicts(logs, registered=[1, 2], listed={1: "online", 2: "online"})
    assert verdicts == {
        "tls": "refused (TLS certificate not trusted)",
        "key": "refused (not registered)",
        "in": "JOINED (its log shows a SuperNode id)",
    }
    sneaky = intruder_verdicts(
        {"tls": logs["tls"]}, [1, 2], {1: "online", 2: "online", 9: "online"}
    )
    assert sneaky["tls"].startswith("JOINED?")


def test_the_stranger_verdict_needs_no_train_message_and_the_serverapps_refusal(pki) -> None:
    key = pki.nodes[1]
    joined = f"INFO {JOINED_LINE} 77\nReceiving: query message (ID: 1)"
    refusal = "WARNING node 77 refused, no work for it: partition 0 belongs to the key ..."
    assert stranger_verdict(joined, refusal, 77, key).startswith("refused (key SHA256:")
    assert stranger_verdict(joined, "", 77, key).startswith("JOINED, not refused")
    got_work = joined + "\nReceiving: train message (ID: 2)"
    assert stranger_verdict(got_work, refusal, 77, key).startswith("GOT WORK")
    assert stranger_verdict("", "", 77, key) == "refused (node 77 never joined)"


def test_the_registration_guard_revokes_keys_registered_after_the_start() -> None:
    listed = {1: "online", 2: "online"}
    asked: list[int] = []

    def revoke(node: int) -> bool:
        asked.append(node)
        listed.pop(node)
        return True

    guard = RegistrationGuard([1, 2], lambda: dict(listed), revoke, interval=0.01)
    assert guard.check_once() == []
    listed[9] = "online"  # a stranger registered its own key
    assert guard.check_once() == [9] and guard.revoked == [9] and 9 not in listed
    assert guard.check_once() == [] and asked == [9]


def test_secure_pki_script_for_real_machines(tmp_path, capsys) -> None:
    spec = importlib.util.spec_from_file_location("secure_pki", REPO / "scripts" / "secure_pki.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "pki"
    assert (
        script.main(
            ["--out", str(out), "--ip", "10.0.0.5", "--dns", "link.example", "--nodes", "1"]
        )
        == 0
    )
    cert = x509.load_pem_x509_certificate((out / "superlink.crt").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.5")]
    assert san.get_values_for_type(x509.DNSName) == ["link.example"]
    assert script.main(["--out", str(out), "--nodes", "1"]) == 2  # never overwrite a CA
    assert script.main(["--out", str(out), "--add-nodes", "2"]) == 0
    assert sorted(p.name for p in (out / "nodes").glob("*.pub")) == [
        "node-0.pub",
        "node-1.pub",
        "node-2.pub",
    ]
