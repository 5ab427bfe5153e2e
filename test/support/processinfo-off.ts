// Preloaded into every test process: test/support/run.ts puts it first in NODE_OPTIONS, so it
// runs before tap's own preload, @tapjs/processinfo. That one records every module a process
// loads (it reads each source file again and parses every dependency's source map) for coverage
// and `tap --changed`, neither of which this project uses; it cost about a second of CPU per
// test file. It reads its exclusion pattern from this variable when it loads (tap's runner sets
// the variable for the test processes it starts, hence a preload and not the environment).
process.env._TAPJS_PROCESSINFO_EXCLUDE_ = '/./';
