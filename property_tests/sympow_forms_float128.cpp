// sympow: the attention, recurrent and chunked forms agree, every variant and power, in
// float128 (the truth precision). Bounds: reference/sympow/bounds.hpp.
#include "reference/core/float128.hpp"
#include "sympow_properties.hpp"

using namespace ruleproof::sympow::test;
using S = ruleproof::float128;

TEST_CASE("attention_equals_recurrent_equals_chunked_plain/float128", "[sympow][float128]") {
  forms_agree<S>(Variant::plain);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_fixed_rotary/float128", "[sympow][float128]") {
  forms_agree<S>(Variant::rotary);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_gated/float128", "[sympow][float128]") {
  forms_agree<S>(Variant::gated);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_data_dependent_rotation/float128",
          "[sympow][float128]") {
  forms_agree<S>(Variant::rates);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_gated_and_rotated/float128",
          "[sympow][float128]") {
  forms_agree<S>(Variant::conformal);
}
