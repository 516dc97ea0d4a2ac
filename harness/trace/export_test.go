package trace

// Env is env, for the package's tests outside it.
var Env = env
