// The native builds (SQLite's amalgamation inside better-sqlite3, libopus, our addons) take most of a
// set-up's time on two cores, and a new clone on the same machine would compile the same sources
// again. Debian's ccache keeps the compiler's results: setup.mjs's buildEnv() compiles through it
// when it is installed, with paths taken relative to the checkout so another clone's build hits.
export const apt = [['ccache', 'compiler cache: a later set-up on this machine reuses the native builds']];
