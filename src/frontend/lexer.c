/* lexer.c: the tokenizer for the Python subset of nvFuser definitions.
 *
 * Produces names, numbers (123, 1e-5, .5, 1_000), strings ('..', "..",
 * triple-quoted), punctuation, and NEWLINE / INDENT / DEDENT as Python does:
 * blank and comment-only lines produce nothing, newlines inside brackets are
 * ignored (implicit line joining), a backslash before a newline joins lines.
 * Tokens are produced one at a time (no token array), so memory does not grow
 * with the file.  Every byte is checked against `size`; NUL and non-ASCII
 * bytes outside strings and comments are errors.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend_internal.h"

void fv_frontend_lexer_init(fv_frontend_lexer *lexer, const char *path, const char *text,
                            size_t size)
{
    memset(lexer, 0, sizeof *lexer);
    lexer->path = path;
    lexer->text = text;
    lexer->size = size;
    lexer->line = 1;
    lexer->at_line_start = true;
}

/* ------------------------------------------------------------ helpers */

static int column_at(const fv_frontend_lexer *lexer, size_t position)
{
    return (int)(position - lexer->line_start) + 1;
}

static fv_status lex_error(const fv_frontend_lexer *lexer, size_t position, const char *format,
                           ...) __attribute__((format(printf, 3, 4)));

static fv_status lex_error(const fv_frontend_lexer *lexer, size_t position, const char *format,
                           ...)
{
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return fv_frontend_error_at(FV_ERR_INPUT, lexer->path, lexer->line,
                                column_at(lexer, position), "%s", message);
}

static bool at_end(const fv_frontend_lexer *lexer, size_t position)
{
    return position >= lexer->size;
}

static char byte_at(const fv_frontend_lexer *lexer, size_t position)
{
    return position < lexer->size ? lexer->text[position] : '\0';
}

static bool is_name_start(char c) { return isalpha((unsigned char)c) || c == '_'; }

static bool is_name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the newline at `position` ("\n", "\r\n" or "\r"), or 0. */
static size_t newline_length(const fv_frontend_lexer *lexer, size_t position)
{
    char c = byte_at(lexer, position);
    if (at_end(lexer, position) || (c != '\n' && c != '\r'))
        return 0;
    if (c == '\r' && byte_at(lexer, position + 1) == '\n' && !at_end(lexer, position + 1))
        return 2;
    return 1;
}

/* Moves past a newline at the current position and starts the next line. */
static void consume_newline(fv_frontend_lexer *lexer)
{
    lexer->position += newline_length(lexer, lexer->position);
    lexer->line++;
    lexer->line_start = lexer->position;
}

static void skip_comment(fv_frontend_lexer *lexer)
{
    while (!at_end(lexer, lexer->position) && newline_length(lexer, lexer->position) == 0)
        lexer->position++;
}

static void set_token(const fv_frontend_lexer *lexer, fv_frontend_token *token,
                      fv_frontend_token_kind kind, size_t start, size_t length)
{
    memset(token, 0, sizeof *token);
    token->kind = kind;
    token->line = lexer->line;
    token->column = column_at(lexer, start);
    token->text = lexer->text + (start < lexer->size ? start : lexer->size);
    token->length = length;
}

/* Describes a byte that cannot start a token. */
static fv_status unexpected_byte(const fv_frontend_lexer *lexer, size_t position)
{
    unsigned char c = (unsigned char)lexer->text[position];
    if (c == 0)
        return lex_error(lexer, position, "unexpected NUL byte");
    if (c == '\\')
        return lex_error(lexer, position, "unexpected '\\' (only a line continuation is allowed)");
    if (c >= 0x21 && c < 0x7f)
        return lex_error(lexer, position, "unexpected character '%c'", c);
    return lex_error(lexer, position, "unexpected byte 0x%02x", c);
}

/* ------------------------------------------------------- indentation */

/* At the start of a physical line outside brackets: skips blank and
 * comment-only lines, then compares the indentation with the stack and may
 * emit INDENT, DEDENT or (at the end of the file) DEDENTs and END. */
static fv_status begin_logical_line(fv_frontend_lexer *lexer, fv_frontend_token *token,
                                    bool *emitted)
{
    *emitted = false;
    for (;;) {
        int width = 0;
        size_t position = lexer->position;
        while (!at_end(lexer, position)) {
            char c = lexer->text[position];
            if (c == ' ')
                width++;
            else if (c == '\t')
                width += 8 - width % 8;
            else if (c == '\f')
                width = 0;
            else
                break;
            position++;
        }
        lexer->position = position;
        if (at_end(lexer, position)) {
            if (lexer->indent_depth > 0) {
                lexer->pending_dedents = lexer->indent_depth - 1;
                lexer->indent_depth = 0;
                set_token(lexer, token, FV_TOKEN_DEDENT, position, 0);
            } else {
                set_token(lexer, token, FV_TOKEN_END, position, 0);
            }
            *emitted = true;
            return FV_OK;
        }
        char c = lexer->text[position];
        if (c == '#') {
            skip_comment(lexer);
            if (at_end(lexer, lexer->position))
                continue;
        }
        if (newline_length(lexer, lexer->position) > 0) {
            consume_newline(lexer);
            continue;
        }
        lexer->at_line_start = false;
        int current = lexer->indents[lexer->indent_depth];
        if (width > current) {
            if (lexer->indent_depth >= FV_FRONTEND_MAX_NESTING)
                return lex_error(lexer, position, "too deeply indented (more than %d levels)",
                                 FV_FRONTEND_MAX_NESTING);
            lexer->indents[++lexer->indent_depth] = width;
            set_token(lexer, token, FV_TOKEN_INDENT, position, 0);
            *emitted = true;
        } else if (width < current) {
            int popped = 0;
            while (lexer->indent_depth > 0 && lexer->indents[lexer->indent_depth] > width) {
                lexer->indent_depth--;
                popped++;
            }
            if (lexer->indents[lexer->indent_depth] != width)
                return lex_error(lexer, position,
                                 "unindent does not match any outer indentation level");
            lexer->pending_dedents = popped - 1;
            set_token(lexer, token, FV_TOKEN_DEDENT, position, 0);
            *emitted = true;
        }
        return FV_OK;
    }
}

/* ------------------------------------------------------------- tokens */

static fv_status scan_name(fv_frontend_lexer *lexer, fv_frontend_token *token)
{
    size_t start = lexer->position;
    size_t position = start;
    while (!at_end(lexer, position) && is_name_char(lexer->text[position]))
        position++;
    if (position - start > FV_FRONTEND_MAX_NAME)
        return lex_error(lexer, start, "name is too long (more than %d characters)",
                         FV_FRONTEND_MAX_NAME);
    set_token(lexer, token, FV_TOKEN_NAME, start, position - start);
    lexer->position = position;
    return FV_OK;
}

/* Digits with single underscores between them; returns the end. */
static size_t scan_digits(const fv_frontend_lexer *lexer, size_t position)
{
    while (!at_end(lexer, position)) {
        char c = lexer->text[position];
        if (is_digit(c))
            position++;
        else if (c == '_' && position > 0 && is_digit(lexer->text[position - 1]) &&
                 is_digit(byte_at(lexer, position + 1)) && !at_end(lexer, position + 1))
            position++;
        else
            break;
    }
    return position;
}

/* Converts the digits of a number token (underscores dropped). */
static fv_status convert_number(fv_frontend_lexer *lexer, fv_frontend_token *token, size_t start,
                                bool is_float)
{
    char digits[FV_FRONTEND_MAX_NUMBER_LENGTH + 1];
    size_t used = 0;
    for (size_t i = 0; i < token->length; i++)
        if (token->text[i] != '_')
            digits[used++] = token->text[i];
    digits[used] = '\0';
    if (is_float) {
        token->kind = FV_TOKEN_FLOAT;
        token->real = strtod(digits, NULL);
        if (!isfinite(token->real))
            return lex_error(lexer, start, "number %s is out of range", digits);
        return FV_OK;
    }
    int64_t value = 0;
    for (size_t i = 0; i < used; i++) {
        int digit = digits[i] - '0';
        if (value > (INT64_MAX - digit) / 10)
            return lex_error(lexer, start, "integer %.40s%s is too large", digits,
                             used > 40 ? "..." : "");
        value = value * 10 + digit;
    }
    token->kind = FV_TOKEN_INTEGER;
    token->integer = value;
    return FV_OK;
}

static fv_status scan_number(fv_frontend_lexer *lexer, fv_frontend_token *token)
{
    size_t start = lexer->position;
    size_t position = start;
    bool is_float = false;
    if (lexer->text[position] != '.')
        position = scan_digits(lexer, position);
    if (byte_at(lexer, position) == '.' && !at_end(lexer, position)) {
        is_float = true;
        position = scan_digits(lexer, position + 1);
    }
    char c = byte_at(lexer, position);
    if (!at_end(lexer, position) && (c == 'e' || c == 'E')) {
        size_t exponent = position + 1;
        char sign = byte_at(lexer, exponent);
        if (!at_end(lexer, exponent) && (sign == '+' || sign == '-'))
            exponent++;
        if (at_end(lexer, exponent) || !is_digit(lexer->text[exponent]))
            return lex_error(lexer, start, "invalid number literal");
        is_float = true;
        position = scan_digits(lexer, exponent);
    }
    if (!at_end(lexer, position) && is_name_char(lexer->text[position]))
        return lex_error(lexer, start, "invalid number literal");
    if (position - start > FV_FRONTEND_MAX_NUMBER_LENGTH)
        return lex_error(lexer, start, "number literal is too long (more than %d characters)",
                         FV_FRONTEND_MAX_NUMBER_LENGTH);
    set_token(lexer, token, FV_TOKEN_INTEGER, start, position - start);
    lexer->position = position;
    return convert_number(lexer, token, start, is_float);
}

static fv_status scan_string(fv_frontend_lexer *lexer, fv_frontend_token *token)
{
    size_t start = lexer->position;
    int start_line = lexer->line;
    int start_column = column_at(lexer, start);
    char quote = lexer->text[start];
    bool triple = byte_at(lexer, start + 1) == quote && byte_at(lexer, start + 2) == quote &&
                  !at_end(lexer, start + 2);
    size_t position = start + (triple ? 3 : 1);
    for (;;) {
        if (at_end(lexer, position))
            return fv_frontend_error_at(FV_ERR_INPUT, lexer->path, start_line, start_column,
                                        "unterminated string");
        char c = lexer->text[position];
        if (c == '\0')
            return lex_error(lexer, position, "unexpected NUL byte in a string");
        if (c == '\\' && !at_end(lexer, position + 1)) {
            position++; /* the escaped byte; an escaped newline continues the string */
            if (newline_length(lexer, position) == 0) {
                position++;
                continue;
            }
            lexer->position = position;
            consume_newline(lexer);
            position = lexer->position;
            continue;
        }
        size_t newline = newline_length(lexer, position);
        if (newline > 0) {
            if (!triple)
                return fv_frontend_error_at(FV_ERR_INPUT, lexer->path, start_line, start_column,
                                            "unterminated string");
            lexer->position = position;
            consume_newline(lexer);
            position = lexer->position;
            continue;
        }
        if (c == quote) {
            if (!triple) {
                position++;
                break;
            }
            if (byte_at(lexer, position + 1) == quote && byte_at(lexer, position + 2) == quote &&
                !at_end(lexer, position + 2)) {
                position += 3;
                break;
            }
        }
        position++;
    }
    memset(token, 0, sizeof *token);
    token->kind = FV_TOKEN_STRING;
    token->line = start_line;
    token->column = start_column;
    token->text = lexer->text + start;
    token->length = position - start;
    lexer->position = position;
    return FV_OK;
}

static fv_status scan_operator(fv_frontend_lexer *lexer, fv_frontend_token *token)
{
    static const char *const pairs[] = {"->", "**", "==", "!=", "<=", ">=", "//", "+=",
                                        "-=", "*=", "/=", "<<", ">>", ":="};
    static const char singles[] = "()[]{},:.;=+-*/%@<>~&|^";
    size_t start = lexer->position;
    char c = lexer->text[start];
    char next = byte_at(lexer, start + 1);
    if (!at_end(lexer, start + 1)) {
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
            if (pairs[i][0] == c && pairs[i][1] == next) {
                set_token(lexer, token, FV_TOKEN_OPERATOR, start, 2);
                lexer->position += 2;
                return FV_OK;
            }
        }
    }
    if (c == '\0' || strchr(singles, c) == NULL)
        return unexpected_byte(lexer, start);
    if (c == '(' || c == '[' || c == '{') {
        if (lexer->bracket_depth >= FV_FRONTEND_MAX_NESTING)
            return lex_error(lexer, start, "brackets nested too deeply (more than %d)",
                             FV_FRONTEND_MAX_NESTING);
        lexer->bracket_depth++;
    } else if ((c == ')' || c == ']' || c == '}') && lexer->bracket_depth > 0) {
        lexer->bracket_depth--;
    }
    set_token(lexer, token, FV_TOKEN_OPERATOR, start, 1);
    lexer->position++;
    return FV_OK;
}

/* Skips spaces, comments, continuations and (inside brackets) newlines.
 * Returns true with a NEWLINE token when a logical line ends. */
static fv_status skip_within_line(fv_frontend_lexer *lexer, fv_frontend_token *token,
                                  bool *emitted)
{
    *emitted = false;
    for (;;) {
        if (at_end(lexer, lexer->position))
            return FV_OK;
        char c = lexer->text[lexer->position];
        if (c == ' ' || c == '\t' || c == '\f') {
            lexer->position++;
        } else if (c == '#') {
            skip_comment(lexer);
        } else if (c == '\\') {
            if (newline_length(lexer, lexer->position + 1) == 0)
                return unexpected_byte(lexer, lexer->position);
            lexer->position++;
            consume_newline(lexer);
        } else if (newline_length(lexer, lexer->position) > 0) {
            size_t newline_at = lexer->position;
            bool ends_line = lexer->bracket_depth == 0 && lexer->line_has_tokens;
            if (ends_line)
                set_token(lexer, token, FV_TOKEN_NEWLINE, newline_at, 0);
            consume_newline(lexer);
            if (lexer->bracket_depth == 0) {
                lexer->at_line_start = true;
                lexer->line_has_tokens = false;
            }
            if (ends_line) {
                *emitted = true;
                return FV_OK;
            }
            if (lexer->at_line_start)
                return FV_OK;
        } else {
            return FV_OK;
        }
    }
}

fv_status fv_frontend_lex_next(fv_frontend_lexer *lexer, fv_frontend_token *token)
{
    for (;;) {
        if (lexer->pending_dedents > 0) {
            lexer->pending_dedents--;
            set_token(lexer, token, FV_TOKEN_DEDENT, lexer->position, 0);
            return FV_OK;
        }
        bool emitted = false;
        if (lexer->at_line_start && lexer->bracket_depth == 0) {
            FV_TRY(begin_logical_line(lexer, token, &emitted));
            if (emitted)
                return FV_OK;
        }
        FV_TRY(skip_within_line(lexer, token, &emitted));
        if (emitted)
            return FV_OK;
        if (lexer->at_line_start && lexer->bracket_depth == 0)
            continue;
        if (at_end(lexer, lexer->position)) {
            if (lexer->bracket_depth > 0) {
                set_token(lexer, token, FV_TOKEN_END, lexer->position, 0);
                return FV_OK;
            }
            bool ends_line = lexer->line_has_tokens;
            lexer->at_line_start = true;
            lexer->line_has_tokens = false;
            if (ends_line) {
                set_token(lexer, token, FV_TOKEN_NEWLINE, lexer->position, 0);
                return FV_OK;
            }
            continue;
        }
        lexer->line_has_tokens = true;
        char c = lexer->text[lexer->position];
        if (is_name_start(c))
            return scan_name(lexer, token);
        if (is_digit(c) || (c == '.' && is_digit(byte_at(lexer, lexer->position + 1)) &&
                            !at_end(lexer, lexer->position + 1)))
            return scan_number(lexer, token);
        if (c == '\'' || c == '"')
            return scan_string(lexer, token);
        return scan_operator(lexer, token);
    }
}

void fv_frontend_token_describe(const fv_frontend_token *token, char *buffer, size_t size)
{
    int length = token->length > 40 ? 40 : (int)token->length;
    const char *more = token->length > 40 ? "..." : "";
    switch (token->kind) {
    case FV_TOKEN_END: snprintf(buffer, size, "end of file"); break;
    case FV_TOKEN_NEWLINE: snprintf(buffer, size, "newline"); break;
    case FV_TOKEN_INDENT: snprintf(buffer, size, "indent"); break;
    case FV_TOKEN_DEDENT: snprintf(buffer, size, "dedent"); break;
    case FV_TOKEN_NAME: snprintf(buffer, size, "name '%.*s%s'", length, token->text, more); break;
    case FV_TOKEN_INTEGER:
    case FV_TOKEN_FLOAT:
        snprintf(buffer, size, "number %.*s%s", length, token->text, more);
        break;
    case FV_TOKEN_STRING: snprintf(buffer, size, "string"); break;
    case FV_TOKEN_OPERATOR: snprintf(buffer, size, "'%.*s'", length, token->text); break;
    }
}
