// Catch2's main, in its own object file so it is compiled once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
