/** Self-signed certificates for tests that speak TLS on loopback, made by the machine's openssl. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export interface CertificateFiles {
  keyPath: string;
  certPath: string;
}

/**
 * Writes key.pem and cert.pem (RSA 2048, valid one day, CN belfry-test) into `dir`, the certificate
 * valid for `subjectAltName` (e.g. `IP:127.0.0.1,DNS:localhost`).
 */
export function selfSignedCertificate(dir: string, subjectAltName: string): CertificateFiles {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '1'].concat([
      '-subj',
      '/CN=belfry-test',
      '-addext',
      `subjectAltName=${subjectAltName}`,
    ]),
    { stdio: 'ignore' },
  );
  return { keyPath, certPath };
}
