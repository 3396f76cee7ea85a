// ruleproof: the version and commit every report records (start_run in result.cpp), from the
// header build_info.cmake writes at every build. The one unit that includes it, so that a new
// commit or a tree turned dirty recompiles this file alone.
#include "ruleproof_build_info.hpp"

namespace ruleproof::reports {

const char *tool_version() { return RULEPROOF_VERSION; }
const char *tool_commit() { return RULEPROOF_COMMIT; }

} // namespace ruleproof::reports
