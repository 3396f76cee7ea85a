// ruleproof: the dimension of a rule's log-gate, apart from the checks that use it, so that
// light headers (reference/rule_id.hpp) can name it without the tensors.
#pragma once

namespace ruleproof {

/// Which dimension a rule's log-gate has.
enum class GateKind { none, scalar, key, value };

} // namespace ruleproof
