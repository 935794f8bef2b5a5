import { keyModeOf, type Mode, modeLabel, modeOfKey } from '../common/modes.ts';
import type { Config } from '../config.ts';
import { UsageError } from './output.ts';

/**
 * The mode a command acts in: `--mode test|live`, one the deployment serves; without it, the
 * deployment's main mode (live where live is served, else test).
 */
export function modeOption(given: string | undefined, config: Pick<Config, 'modes'>): Mode {
  const served = config.modes.map((mode) => keyModeOf(mode)).join(' or ');
  if (given === undefined) return config.modes.includes('live') ? 'live' : 'sandbox';
  if (given !== 'test' && given !== 'live') throw new UsageError(`--mode must be test or live, not ${given}`);
  const mode = modeOfKey(given);
  if (!config.modes.includes(mode)) throw new UsageError(`this deployment does not serve ${modeLabel(mode)} mode (it serves ${served})`);
  return mode;
}
