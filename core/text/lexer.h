#pragma once
// Tokens of jaxpr text. Whitespace and newlines separate tokens and mean nothing else.
#include <string>
#include <string_view>
#include <vector>

#include "core/text/syntax.h"

namespace jx::text {

struct Token {
  enum class Kind { name, number, string, punct, opaque, end };
  Kind kind = Kind::end;
  std::string text;  // punct: one character; opaque: "<...>" with its contents
  Pos pos;
};

// Splits `src` into tokens; throws ParseError (file:line:col) on a character that starts none.
std::vector<Token> tokenize(std::string_view src, std::string_view file);

// How a token reads in an error message: 'name', end of input, ...
std::string describe(const Token& t);

}  // namespace jx::text
