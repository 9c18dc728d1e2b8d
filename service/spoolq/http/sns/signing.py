"""The key pair notifications are signed with, and the certificate clients verify them against.

An SNS message delivered as JSON (not raw) carries ``Signature`` (base64 of an RSA PKCS#1 v1.5
signature, SHA-1 for ``SignatureVersion`` 1, SHA-256 for 2) over AWS's string to sign
(:mod:`.envelope`), and ``SigningCertURL``, where the certificate with the public key is served:
``<scheme>://<host>/SimpleNotificationService-<key id>.pem`` on the same port.

Where the key lives (:meth:`~spoolq.topics.catalog.TopicRegistry.signing_keys`): ``<root>/topics/signing/<key id>.pem`` (mode 0600), the private key and its
self-signed certificate (RSA 2048, ``CN=sns.spoolq.local``, ten years), ``<key id>`` the first 32
hex digits of the SHA-256 of the certificate. Every node uses the same one: the first process that
needs a key and finds none makes one, writes it whole to ``tmp/`` and renames it in (its name is
its own, so no rename replaces another's key); every process then signs with the key of the
smallest id there, so two nodes that made one at the same moment agree from their next look. A
certificate once written stays (a message signed with it can be verified as long as it is kept).

Crash rules: a key is visible only once whole (written in ``tmp/``, fsync'd, renamed, directory
fsync'd); a crash leaves at most a temp file, swept with the others.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import threading
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from spoolq.topics.catalog import TopicRegistry


@dataclass(frozen=True)
class Signer:
    key_id: str
    private_key: rsa.RSAPrivateKey
    certificate_pem: bytes

    def sign(self, text: str, version: str = "1") -> str:
        """Base64 of the signature of ``text`` (SHA-1 for version 1, SHA-256 for 2)."""
        algorithm: hashes.HashAlgorithm = hashes.SHA256() if version == "2" else hashes.SHA1()
        return base64.b64encode(self.private_key.sign(text.encode("utf-8"), padding.PKCS1v15(), algorithm)).decode()

    def cert_url(self, base_url: str) -> str:
        return f"{base_url}/SimpleNotificationService-{self.key_id}.pem"


class SigningKeys:
    """The signing key of a root (see the module docstring), made on first use."""

    def __init__(self, topics: TopicRegistry) -> None:
        self.topics = topics
        self._lock = threading.Lock()
        self._signer: Signer | None = None

    def signer(self) -> Signer:
        signer = self._signer
        if signer is None:
            with self._lock:
                if self._signer is None:
                    self._signer = self._load() or self._make()
                signer = self._signer
        return signer

    def certificate(self, key_id: str) -> bytes | None:
        """The PEM certificate of key ``key_id`` (``None``: no such key)."""
        for found, data in self.topics.signing_keys():
            if found == key_id:
                start = data.find(b"-----BEGIN CERTIFICATE-----")
                return data[start:] if start >= 0 else None
        return None

    def _load(self) -> Signer | None:
        for key_id, data in self.topics.signing_keys():
            try:
                key = serialization.load_pem_private_key(data, password=None)
            except ValueError:
                continue
            if isinstance(key, rsa.RSAPrivateKey):
                start = data.find(b"-----BEGIN CERTIFICATE-----")
                return Signer(key_id, key, data[start:])
        return None

    def _make(self) -> Signer:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.spoolq.local")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=3650)).sign(key, hashes.SHA256()))
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        key_id = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()[:32]
        self.topics.add_signing_key(key_id, key_pem + cert_pem)
        return self._load() or Signer(key_id, key, cert_pem)
