"""Certificates for the TLS tests, made with `openssl`: a CA, certificates it signs, PEM key
stores (key + certificate in one file, as the broker's `ssl.keystore.location` and the Java
client's `ssl.keystore.type=PEM` take them), and `MutualTls`, everything a cluster whose
every listener is SSL with client certificates required needs (e2e/security/tls.py,
e2e/security/sasl.py, e2e/cluster/replication.py --tls).

Keys are EC P-256 (PKCS#8); certificates last two days.
"""
import os
import ssl
import subprocess


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def issue(directory, name, subject, ca, extensions=None):
    """A PKCS#8 key and a certificate for `subject` signed by `ca` (a (key, cert) pair of
    paths); returns (key path, certificate path)."""
    key, csr, cert = (os.path.join(directory, f"{name}.{suffix}") for suffix in ("key", "csr", "crt"))
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
    openssl("req", "-new", "-key", key, "-subj", subject, "-out", csr)
    args = ["x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0], "-CAcreateserial",
            "-days", "2", "-out", cert]
    if extensions:
        ext = os.path.join(directory, f"{name}.ext")
        with open(ext, "w") as f:
            f.write(extensions)
        args += ["-extfile", ext]
    openssl(*args)
    return key, cert


def make_ca(directory, name, subject):
    """A self-signed CA: (key path, certificate path)."""
    key, cert = (os.path.join(directory, f"{name}.{suffix}") for suffix in ("key", "crt"))
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-subj", subject, "-days", "2", "-out", cert)
    return key, cert


def concat(path, *parts):
    with open(path, "w") as out:
        for part in parts:
            with open(part) as f:
                out.write(f.read())
    return path


def broker_store(directory, name, ca, cn, usage="serverAuth", sans="IP:127.0.0.1,DNS:localhost"):
    """A broker's PEM key store (key + certificate) for CN=`cn`, valid for the
    subjectAltNames `sans` (clients check the address they connect to against them)."""
    key, cert = issue(directory, name, f"/CN={cn}", ca, f"subjectAltName={sans}\nextendedKeyUsage={usage}\n")
    return concat(os.path.join(directory, f"{name}.pem"), key, cert)


class MutualTls:
    """A CA; for each node a key store whose certificate names the node's own address (its
    only subjectAltName: clients and the other brokers check it) and may serve and be a
    client (a broker is the client of the others' replication and controller listeners);
    and one client certificate, CN=`client_cn`, for every client of the test.

    `hosts`: {node: the address it listens and is reached on}."""

    def __init__(self, directory, hosts, client_cn="history-client"):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.ca = make_ca(directory, "ca", "/CN=Oxbow cluster test CA")
        self.stores = {node: broker_store(directory, f"node-{node}", self.ca, f"oxbow-node-{node}",
                                          usage="serverAuth,clientAuth", sans=f"IP:{host}")
                       for node, host in hosts.items()}
        self.client = issue(directory, client_cn, f"/O=Example/OU=apps/CN={client_cn}", self.ca,
                            "extendedKeyUsage=clientAuth\n")
        self.client_store = concat(os.path.join(directory, f"{client_cn}.pem"), *self.client)
        self.java_properties = os.path.join(directory, "java-client.properties")
        with open(self.java_properties, "w") as f:
            f.write("".join(f"{k}={v}\n" for k, v in self.java().items()))
        self.context = ssl.create_default_context(cafile=self.ca[1])
        self.context.load_cert_chain(self.client[1], self.client[0])

    def broker_overrides(self, node):
        """The node's TLS settings; its listeners must be named SSL and CONTROLLER."""
        return ["listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL", "inter.broker.listener.name=SSL",
                f"ssl.keystore.location={self.stores[node]}", f"ssl.truststore.location={self.ca[1]}",
                "ssl.client.auth=required"]

    def librdkafka(self):
        """The security settings of a librdkafka (confluent-kafka) client."""
        return {"security.protocol": "SSL", "ssl.ca.location": self.ca[1],
                "ssl.certificate.location": self.client[1], "ssl.key.location": self.client[0]}

    def java(self):
        """The security settings of a Java client (PEM stores)."""
        return {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca[1],
                "ssl.keystore.type": "PEM", "ssl.keystore.location": self.client_store}
