// Types only (see include/CSecretServiceShim.h); SwiftPM wants one source file per C target.
#include "CSecretServiceShim.h"
