import { keyModeOf, type Mode, modeLabel, modeOfKey } from '../common/modes.ts';
import type { Config } from '../config.ts';
import { UsageError } from './output.ts';

/**
 * The mode a command acts in: `--mode test|live`, one the deployment serves; without it, the
 * deployment's main mode (live where live is served, else test) — or, for a command named in
 * `askedBy`, a usage error when the deployment serves both: what it makes would act in one only.
 */
export function modeOption(given: string | undefined, config: Pick<Config, 'modes'>, askedBy?: string): Mode {
  const served = config.modes.map((mode) => keyModeOf(mode)).join(' or ');
  if (given === undefined) {
    if (askedBy && config.modes.length > 1)
      throw new UsageError(`${askedBy} needs --mode ${served}: this deployment serves both, and what it makes acts in one only`);
    return config.modes.includes('live') ? 'live' : 'sandbox';
  }
  if (given !== 'test' && given !== 'live') throw new UsageError(`--mode must be test or live, not ${given}`);
  const mode = modeOfKey(given);
  if (!config.modes.includes(mode)) throw new UsageError(`this deployment does not serve ${modeLabel(mode)} mode (it serves ${served})`);
  return mode;
}
