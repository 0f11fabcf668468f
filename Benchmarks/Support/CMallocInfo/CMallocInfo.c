// Only the header matters (a static inline function); SwiftPM wants a source file.
