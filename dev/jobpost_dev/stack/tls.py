"""A certificate authority of one's own, made with Debian's openssl: for the local broker's
SASL_SSL listener (and for tests that need a server their client must verify).

`CertificateAuthority.create(folder)` writes `ca.pem` (what clients trust: librdkafka's
`ssl.ca.location`, an HTTP client's CA bundle) and `ca.key`; `issue()` signs a server's
certificate for the names and addresses clients connect to, as PEM files or, for a Java
server such as Kafka, a PKCS#12 keystore.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from jobpost_dev.stack.settings import StackError

DAYS = 30  # a local stack's or a test's certificates; made again whenever the folder is new


@dataclass(frozen=True)
class ServerCertificate:
    certificate: Path  # PEM, the server's certificate followed by the CA's
    key: Path  # PEM, unencrypted


@dataclass(frozen=True)
class CertificateAuthority:
    folder: Path

    @property
    def certificate(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def key(self) -> Path:
        return self.folder / "ca.key"

    @classmethod
    def create(cls, folder: Path, name: str = "jobpost local CA") -> CertificateAuthority:
        folder.mkdir(parents=True, exist_ok=True)
        authority = cls(folder)
        _openssl(
            "req",
            "-x509",
            *_EC_KEY,
            "-nodes",
            "-days",
            str(DAYS),
            "-subj",
            f"/CN={name}",
            "-keyout",
            str(authority.key),
            "-out",
            str(authority.certificate),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        )
        authority.key.chmod(0o600)
        return authority

    def issue(self, name: str, hosts: list[str]) -> ServerCertificate:
        """A server certificate for `hosts` (DNS names and IP addresses), signed by this CA."""
        key, request, signed = (self.folder / f"{name}{suffix}" for suffix in (".key", ".csr", ".pem"))
        _openssl(
            "req", *_EC_KEY, "-nodes", "-subj", f"/CN={hosts[0]}", "-keyout", str(key), "-out", str(request)
        )
        key.chmod(0o600)
        names = ",".join(f"IP:{h}" if _is_address(h) else f"DNS:{h}" for h in hosts)
        extensions = self.folder / f"{name}.ext"
        extensions.write_text(
            f"subjectAltName={names}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n"
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            str(request),
            "-CA",
            str(self.certificate),
            "-CAkey",
            str(self.key),
            "-CAcreateserial",
            "-days",
            str(DAYS),
            "-extfile",
            str(extensions),
            "-out",
            str(signed),
        )
        signed.write_text(signed.read_text() + self.certificate.read_text())  # the chain
        request.unlink()
        extensions.unlink()
        return ServerCertificate(signed, key)

    def issue_keystore(self, name: str, hosts: list[str]) -> tuple[Path, str]:
        """A PKCS#12 keystore (key, certificate, CA) for a Java server, and its password (also
        written beside it, readable by its owner only)."""
        issued = self.issue(name, hosts)
        keystore, password = self.folder / f"{name}.p12", secrets.token_urlsafe(18)
        _openssl(
            "pkcs12",
            "-export",
            "-name",
            name,
            "-in",
            str(issued.certificate),
            "-inkey",
            str(issued.key),
            "-out",
            str(keystore),
            "-passout",
            f"pass:{password}",
        )
        keystore.chmod(0o600)
        password_file = keystore.with_suffix(".password")
        password_file.write_text(password)
        password_file.chmod(0o600)
        return keystore, password


_EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256")


def _is_address(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host


def _openssl(*args: str) -> None:
    if shutil.which("openssl") is None:
        raise StackError("openssl is needed to make the local CA (apt-get install openssl)")
    result = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise StackError(f"openssl {args[0]} failed: {result.stderr.strip()[-2000:]}")
