// V8's heap bounds for `till serve`, given by the launcher (bin/till.mjs, `npm start`) unless the
// operator sets them (NODE_OPTIONS or node's own arguments). Without them V8 sizes its heap from the
// machine's memory: under steady load the young generation grew to 128 MB (all of it resident) and
// the old one collected late, so RSS kept climbing with no object retained. 16 MB semi-spaces keep
// each scavenge short; 1 GB of old space leaves every workload room while making V8 collect sooner
// than a limit of several GB would.
export const SERVE_HEAP_FLAGS = ['--max-semi-space-size=16', '--max-old-space-size=1024'];

/** The heap flags the process was not already given (on its command line or in NODE_OPTIONS). */
export function missingHeapFlags(execArgv = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? '') {
  const given = `${execArgv.join(' ')} ${nodeOptions}`;
  return SERVE_HEAP_FLAGS.filter((flag) => !given.includes(flag.slice(0, flag.indexOf('='))));
}
