// Test PKI made with the openssl binary: a CA, server certificates for 127.0.0.1, client certificates.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const OPENSSL = '/usr/bin/openssl';
export const HAVE_OPENSSL = existsSync(OPENSSL);

const ssl = (args: string[], cwd: string) => execFileSync(OPENSSL, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });

/** A self-signed CA in dir/<name>.{crt,key}. */
export function makeCa(dir: string, name = 'ca'): { crt: string; key: string } {
  ssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.crt`], dir);
  return { crt: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** A leaf certificate signed by the CA, with the given subjectAltName (e.g. "IP:127.0.0.1"). */
export function makeLeaf(dir: string, name: string, ca: { crt: string; key: string }, san: string, cn = name): { crt: string; key: string } {
  ssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${cn}`,
    '-keyout', `${name}.key`, '-out', `${name}.csr`], dir);
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
  ssl(['x509', '-req', '-in', `${name}.csr`, '-CA', ca.crt, '-CAkey', ca.key, '-CAcreateserial', '-days', '2',
    '-extfile', `${name}.ext`, '-out', `${name}.crt`], dir);
  return { crt: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}
