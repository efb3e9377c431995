import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../functions/core/loopback.js';

/** The hostname the WHATWG URL parser makes of `http://<host>/`, as config.ts sees it. */
const parsedHost = (host: string): string => new URL(`http://${host}/`).hostname;

describe('isLoopbackHost', () => {
  it.each([
    'localhost',
    '127.0.0.1',
    '127.255.255.254',
    '127.0.0.0',
    '127.1.2.3',
    '[::1]',
    '0x7f.0.0.1', // hex, read as 127.0.0.1
    '0177.0.0.1', // octal, read as 127.0.0.1
    '127.1', // short form, read as 127.0.0.1
    '2130706433', // one number, read as 127.0.0.1
    '[0:0:0:0:0:0:0:1]', // written [::1]
    'LOCALHOST',
    'LocalHost',
  ])('treats %s, as parsed by WHATWG URL, as loopback', (host) => {
    // Act
    const loopback = isLoopbackHost(parsedHost(host));

    // Assess
    expect(loopback).toBe(true);
  });

  it.each([
    '127.0.0.1.evil.com',
    'localhost.evil.com',
    'evil.localhost',
    'localhost.', // a DNS name, resolved
    'evillocalhost',
    '128.0.0.1',
    '126.255.255.255',
    '10.0.0.1',
    '0.0.0.0',
    '[::]',
    '[::2]',
    '[::ffff:127.0.0.1]', // written [::ffff:7f00:1]; not loopback on an IPv6-only socket
    '[::127.0.0.1]',
    'example.com',
  ])('treats %s, as parsed by WHATWG URL, as not loopback', (host) => {
    // Act
    const loopback = isLoopbackHost(parsedHost(host));

    // Assess
    expect(loopback).toBe(false);
  });

  it.each([
    ['uppercase LOCALHOST', 'LOCALHOST', true],
    ['127.255.255.254', '127.255.255.254', true],
    ['[::1]', '[::1]', true],
    ['an unparsed hex form', '0x7f.0.0.1', false],
    ['an unparsed leading zero', '127.0.0.01', false],
    ['an octet above 255', '127.0.0.256', false],
    ['three octets', '127.0.0', false],
    ['five octets', '127.0.0.1.1', false],
    ['an unbracketed ::1', '::1', false],
    ['a trailing newline', '127.0.0.1\n', false],
    ['a suffix', '127.0.0.1.evil.com', false],
    ['empty', '', false],
  ])('reads a raw hostname with %s strictly', (_label, host, expected) => {
    // Act
    const loopback = isLoopbackHost(host);

    // Assess
    expect(loopback).toBe(expected);
  });
});
