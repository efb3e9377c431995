import type { StageInput } from '../config.js';
import { example } from './example.js';

/** Every deployable stage by name; `-c stage=<name>` picks one. */
export const stages: Readonly<Record<string, StageInput>> = { example };

/** The stage used when no `-c stage=<name>` is given (`npm run synth`). */
export const DEFAULT_STAGE = 'example';
