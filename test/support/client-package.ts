import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The client package's name, from client/package.json: the one place it is
 * set, so that a team can publish it under its own scope by changing it there.
 */
export const CLIENT_PACKAGE_NAME: string = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../../client/package.json'), 'utf8'),
).name;
