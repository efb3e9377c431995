/**
 * A SigV4 signer that signs exactly what it is given, for the mistakes a
 * hand-written client makes: the query signed as typed (unsorted or not
 * encoded), headers left out of SignedHeaders. The AWS SDK signer
 * (sigv4.ts) cannot make them.
 */
import { createHash, createHmac } from 'node:crypto';

export interface RawSignOptions {
  accessKeyId: string;
  secretAccessKey: string;
  region?: string;
  service?: string;
  method?: string;
  path?: string;
  /** The query string as sent; signed as `canonicalQuery` (default: as sent). */
  rawQueryString?: string;
  canonicalQuery?: string;
  /** Host header, e.g. `127.0.0.1:8787`. */
  host: string;
  /** Names to sign, sorted; default `host;x-amz-date`. */
  signedHeaders?: readonly string[];
  signingDate?: Date;
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) =>
  createHmac('sha256', key).update(data).digest();

/** The headers to send (host, x-amz-date, authorization). */
export function signRaw(options: RawSignOptions): Record<string, string> {
  const region = options.region ?? 'us-east-1';
  const service = options.service ?? 'lambda';
  const amzDate = (options.signingDate ?? new Date()).toISOString().replace(/[-:]|\.\d{3}/g, '');
  const date = amzDate.slice(0, 8);
  const headers: Record<string, string> = { host: options.host, 'x-amz-date': amzDate };
  const signed = options.signedHeaders ?? ['host', 'x-amz-date'];
  const canonicalRequest = [
    options.method ?? 'GET',
    options.path ?? '/token',
    options.canonicalQuery ?? options.rawQueryString ?? '',
    signed.map((name) => `${name}:${headers[name] ?? ''}\n`).join(''),
    signed.join(';'),
    sha256(''),
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  let key = hmac(`AWS4${options.secretAccessKey}`, date);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  const signature = hmac(key, stringToSign).toString('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${options.accessKeyId}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`;
  return headers;
}
