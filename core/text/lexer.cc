#include "core/text/lexer.h"

#include <cctype>
#include <fmt/format.h>

namespace jx::text {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

class Lexer {
 public:
  Lexer(std::string_view s, std::string_view file) : s_(s), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.pos = pos_;
      if (i_ >= s_.size()) {
        out.push_back(t);
        return out;
      }
      const char c = s_[i_];
      if (name_start(c))
        t = name();
      else if (digit(c))
        t = number();
      else if (c == '\'' || c == '"')
        t = quoted(c);
      else if (c == '<')
        t = opaque();
      else if (std::string_view("{}()[],;:=.-*+").find(c) != std::string_view::npos)
        t = take_n(Token::Kind::punct, 1);
      else
        throw ParseError(fmt::format("{}:{}:{}: unexpected character '{}'", file_, pos_.line, pos_.col, printable(c)));
      out.push_back(std::move(t));
    }
  }

 private:
  static std::string printable(char c) {
    if (std::isprint(static_cast<unsigned char>(c))) return std::string(1, c);
    return fmt::format("\\x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
  }
  void advance() {
    if (s_[i_] == '\n') {
      ++pos_.line;
      pos_.col = 1;
    } else {
      ++pos_.col;
    }
    ++i_;
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) advance();
  }
  template <class F>
  Token take(Token::Kind k, F keep) {
    Token t{k, "", pos_};
    while (i_ < s_.size() && keep(s_[i_])) {
      t.text += s_[i_];
      advance();
    }
    return t;
  }
  Token take_n(Token::Kind k, std::size_t n) {
    Token t{k, std::string(s_.substr(i_, n)), pos_};
    for (std::size_t j = 0; j < n; ++j) advance();
    return t;
  }
  // a name; '-' joins two parts (scatter-add, JAX's spelling of some primitives)
  Token name() {
    Token t = take(Token::Kind::name, [&](char d) { return name_char(d); });
    while (i_ + 1 < s_.size() && s_[i_] == '-' && name_start(s_[i_ + 1])) {
      t.text += '-';
      advance();
      t.text += take(Token::Kind::name, [&](char d) { return name_char(d); }).text;
    }
    return t;
  }
  // 12, 1.5, 1e-05, 2.5E+10 (a sign is a separate token)
  Token number() {
    Token t = take(Token::Kind::number, [](char d) { return digit(d); });
    auto more = [&](auto keep) { t.text += take(Token::Kind::number, keep).text; };
    if (i_ + 1 < s_.size() && s_[i_] == '.' && digit(s_[i_ + 1])) {
      t.text += '.';
      advance();
      more([](char d) { return digit(d); });
    } else if (i_ < s_.size() && s_[i_] == '.' && (i_ + 1 == s_.size() || !name_start(s_[i_ + 1]))) {
      // "2." is a float in Python reprs; "4]." ends a binder list and never follows a digit
      t.text += '.';
      advance();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      t.text += 'e';
      advance();
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) {
        t.text += s_[i_];
        advance();
      }
      more([](char d) { return digit(d); });
    }
    return t;
  }
  Token quoted(char q) {
    Token t{Token::Kind::string, "", pos_};
    advance();
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) advance();
      t.text += s_[i_];
      advance();
    }
    if (i_ >= s_.size()) throw ParseError(fmt::format("{}:{}:{}: unterminated string", file_, t.pos.line, t.pos.col));
    advance();
    return t;
  }
  // <function f at 0x7f...>, <lambda>: balanced angle brackets, kept as one opaque token
  Token opaque() {
    Token t{Token::Kind::opaque, "", pos_};
    int depth = 0;
    do {
      if (s_[i_] == '<') ++depth;
      if (s_[i_] == '>') --depth;
      t.text += s_[i_];
      advance();
    } while (depth > 0 && i_ < s_.size() && s_[i_] != '\n');
    if (depth != 0) throw ParseError(fmt::format("{}:{}:{}: unterminated '<'", file_, t.pos.line, t.pos.col));
    return t;
  }

  std::string_view s_, file_;
  std::size_t i_ = 0;
  Pos pos_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view src, std::string_view file) { return Lexer(src, file).run(); }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Token::Kind::end: return "end of input";
    case Token::Kind::string: return fmt::format("string '{}'", t.text);
    default: return fmt::format("'{}'", t.text.size() > 40 ? t.text.substr(0, 40) + "..." : t.text);
  }
}

}  // namespace jx::text
