/* parser.c: a recursive-descent parser for the Python subset of nvFuser
 * definitions, building the syntax tree of frontend_internal.h, plus small
 * helpers over that tree (names, dotted names, literals, call arguments).
 *
 * Grammar (a subset of Python's):
 *   file       := statement* END
 *   statement  := 'import' dotted ['as' NAME] (',' ...)* NEWLINE
 *               | 'from' dotted 'import' ('*' | names | '(' names ')') NEWLINE
 *               | 'def' NAME '(' [param (',' param)*] ')' ['->' expr] ':' block
 *               | 'with' expr 'as' NAME ':' block
 *               | 'pass' NEWLINE | targets '=' expr NEWLINE | expr NEWLINE
 *   block      := NEWLINE INDENT statement+ DEDENT | simple statement
 *   expr       := term (('+'|'-') term)*
 *   term       := unary (('*'|'/') unary)*
 *   unary      := ('+'|'-') unary | postfix
 *   postfix    := atom ('.' NAME | '(' arguments ')')*
 *   atom       := NAME | NUMBER | STRING | '(' [expr (',' expr)* [',']] ')' | '[' ... ']'
 * Nodes live in an arena owned by the syntax tree; the tree's depth is
 * limited, so later recursive walks over it are bounded too.
 */
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend_internal.h"

enum {
    MAX_EXPRESSION_DEPTH = 200,       /* nesting of the syntax tree of one expression */
    ARENA_BLOCK_SIZE = 64 * 1024
};

struct fv_frontend_arena_block {
    struct fv_frontend_arena_block *next;
    size_t used, capacity;
    alignas(max_align_t) unsigned char data[];
};

typedef struct parser {
    const char *path;
    fv_frontend_lexer lexer;
    fv_frontend_token token; /* the current token */
    fv_frontend_syntax *syntax;
    int depth;
} parser;

/* ------------------------------------------------------------- arena */

static fv_status arena_allocate(parser *p, size_t size, void **out)
{
    fv_frontend_syntax *syntax = p->syntax;
    size_t alignment = alignof(max_align_t);
    size = (size + alignment - 1) / alignment * alignment;
    fv_frontend_arena_block *block = syntax->blocks;
    if (block == NULL || block->capacity - block->used < size) {
        size_t capacity = size > ARENA_BLOCK_SIZE ? size : ARENA_BLOCK_SIZE;
        if (syntax->allocated + capacity > FV_FRONTEND_MAX_SYNTAX_BYTES)
            return fv_frontend_error_at(FV_ERR_INPUT, p->path, p->token.line, p->token.column,
                                        "the file is too large to read (its syntax tree needs "
                                        "more than %d MiB)",
                                        FV_FRONTEND_MAX_SYNTAX_BYTES >> 20);
        block = malloc(sizeof *block + capacity);
        FV_CHECK_ALLOC(block);
        block->next = syntax->blocks;
        block->used = 0;
        block->capacity = capacity;
        syntax->blocks = block;
        syntax->allocated += capacity;
    }
    void *memory = block->data + block->used;
    block->used += size;
    memset(memory, 0, size);
    *out = memory;
    return FV_OK;
}

static fv_status new_node(parser *p, fv_frontend_node_kind kind, int line, int column,
                          fv_frontend_node **out)
{
    void *memory = NULL;
    FV_TRY(arena_allocate(p, sizeof(fv_frontend_node), &memory));
    fv_frontend_node *node = memory;
    node->kind = kind;
    node->line = line;
    node->column = column;
    *out = node;
    return FV_OK;
}

static fv_status new_statement(parser *p, fv_frontend_statement_kind kind,
                               fv_frontend_statement **out)
{
    void *memory;
    FV_TRY(arena_allocate(p, sizeof(fv_frontend_statement), &memory));
    fv_frontend_statement *statement = memory;
    statement->kind = kind;
    statement->line = p->token.line;
    statement->column = p->token.column;
    *out = statement;
    return FV_OK;
}

void fv_frontend_syntax_free(fv_frontend_syntax *syntax)
{
    if (syntax == NULL)
        return;
    fv_frontend_arena_block *block = syntax->blocks;
    while (block != NULL) {
        fv_frontend_arena_block *next = block->next;
        free(block);
        block = next;
    }
    memset(syntax, 0, sizeof *syntax);
}

/* ------------------------------------------------------------ tokens */

static fv_status advance(parser *p) { return fv_frontend_lex_next(&p->lexer, &p->token); }

static bool token_is(const fv_frontend_token *token, fv_frontend_token_kind kind,
                     const char *text)
{
    size_t length = strlen(text);
    return token->kind == kind && token->length == length &&
           memcmp(token->text, text, length) == 0;
}

static bool at_operator(const parser *p, const char *op)
{
    return token_is(&p->token, FV_TOKEN_OPERATOR, op);
}

static bool at_keyword(const parser *p, const char *keyword)
{
    return token_is(&p->token, FV_TOKEN_NAME, keyword);
}

static fv_status error_here(parser *p, fv_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static fv_status error_here(parser *p, fv_status status, const char *format, ...)
{
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return fv_frontend_error_at(status, p->path, p->token.line, p->token.column, "%s", message);
}

static fv_status error_expected(parser *p, const char *what)
{
    char found[80];
    fv_frontend_token_describe(&p->token, found, sizeof found);
    return error_here(p, FV_ERR_INPUT, "expected %s but found %s", what, found);
}

static fv_status expect_operator(parser *p, const char *op)
{
    if (!at_operator(p, op)) {
        char what[16];
        snprintf(what, sizeof what, "'%s'", op);
        return error_expected(p, what);
    }
    return advance(p);
}

static fv_status expect_newline(parser *p)
{
    if (p->token.kind != FV_TOKEN_NEWLINE)
        return error_expected(p, "newline");
    return advance(p);
}

static const char *const python_keywords[] = {
    "and",   "as",     "assert", "async",  "await",  "break",    "class",  "continue",
    "def",   "del",    "elif",   "else",   "except", "finally",  "for",    "from",
    "global", "if",    "import", "in",     "is",     "lambda",   "nonlocal", "not",
    "or",    "pass",   "raise",  "return", "try",    "while",    "with",   "yield"};

static bool at_python_keyword(const parser *p)
{
    for (size_t i = 0; i < sizeof python_keywords / sizeof python_keywords[0]; i++)
        if (at_keyword(p, python_keywords[i]))
            return true;
    return false;
}

static fv_status enter(parser *p)
{
    if (++p->depth > MAX_EXPRESSION_DEPTH)
        return error_here(p, FV_ERR_INPUT, "expression nested too deeply (more than %d levels)",
                          MAX_EXPRESSION_DEPTH);
    return FV_OK;
}

/* Appends `node` to a list given by its head and tail pointers. */
static void append_node(fv_frontend_node **head, fv_frontend_node **tail, fv_frontend_node *node)
{
    if (*tail == NULL)
        *head = node;
    else
        (*tail)->next = node;
    *tail = node;
}

/* -------------------------------------------------------- expressions */

static fv_status parse_expression(parser *p, fv_frontend_node **out);

/* Elements up to the closing bracket `close` (a trailing comma is allowed).
 * The current token is the first after the opening bracket. */
static fv_status parse_elements(parser *p, const char *close, fv_frontend_node *container,
                                bool *saw_comma)
{
    fv_frontend_node *tail = NULL;
    *saw_comma = false;
    while (!at_operator(p, close)) {
        fv_frontend_node *element;
        FV_TRY(parse_expression(p, &element));
        append_node(&container->items, &tail, element);
        container->count++;
        if (at_operator(p, ",")) {
            *saw_comma = true;
            FV_TRY(advance(p));
            continue;
        }
        if (!at_operator(p, close)) {
            char what[24];
            snprintf(what, sizeof what, "',' or '%s'", close);
            return error_expected(p, what);
        }
    }
    return advance(p);
}

static fv_status parse_parenthesized(parser *p, fv_frontend_node **out)
{
    int line = p->token.line, column = p->token.column;
    FV_TRY(advance(p));
    fv_frontend_node *tuple;
    FV_TRY(new_node(p, FV_NODE_TUPLE, line, column, &tuple));
    if (at_operator(p, ")")) {
        *out = tuple;
        return advance(p);
    }
    fv_frontend_node *first;
    FV_TRY(parse_expression(p, &first));
    if (at_operator(p, ")")) {
        first->parenthesized = true;
        *out = first;
        return advance(p);
    }
    if (!at_operator(p, ","))
        return error_expected(p, "')'");
    FV_TRY(advance(p));
    tuple->items = first;
    tuple->count = 1;
    fv_frontend_node *rest;
    FV_TRY(new_node(p, FV_NODE_TUPLE, line, column, &rest));
    bool saw_comma;
    FV_TRY(parse_elements(p, ")", rest, &saw_comma));
    first->next = rest->items;
    tuple->count += rest->count;
    *out = tuple;
    return FV_OK;
}

static fv_status parse_atom(parser *p, fv_frontend_node **out)
{
    const fv_frontend_token *token = &p->token;
    switch (token->kind) {
    case FV_TOKEN_NAME:
        if (at_python_keyword(p) && !at_keyword(p, "None"))
            return error_here(p, FV_ERR_UNSUPPORTED, "unsupported syntax '%.*s'",
                              (int)token->length, token->text);
        FV_TRY(new_node(p, FV_NODE_NAME, token->line, token->column, out));
        (*out)->text = token->text;
        (*out)->length = (int)token->length;
        return advance(p);
    case FV_TOKEN_INTEGER:
    case FV_TOKEN_FLOAT:
        FV_TRY(new_node(p, token->kind == FV_TOKEN_INTEGER ? FV_NODE_INTEGER : FV_NODE_FLOAT,
                        token->line, token->column, out));
        (*out)->integer = token->integer;
        (*out)->real = token->real;
        (*out)->text = token->text;
        (*out)->length = (int)token->length;
        return advance(p);
    case FV_TOKEN_STRING:
        FV_TRY(new_node(p, FV_NODE_STRING, token->line, token->column, out));
        (*out)->text = token->text;
        (*out)->length = token->length > 0x7fffffff ? 0x7fffffff : (int)token->length;
        return advance(p);
    default:
        break;
    }
    if (at_operator(p, "("))
        return parse_parenthesized(p, out);
    if (at_operator(p, "[")) {
        FV_TRY(new_node(p, FV_NODE_LIST, token->line, token->column, out));
        FV_TRY(advance(p));
        bool saw_comma;
        return parse_elements(p, "]", *out, &saw_comma);
    }
    return error_expected(p, "an expression");
}

/* Call arguments after '(': positional ones first, then name=value. */
static fv_status parse_arguments(parser *p, fv_frontend_node *call)
{
    FV_TRY(advance(p));
    fv_frontend_node *tail = NULL;
    bool keyword_seen = false;
    while (!at_operator(p, ")")) {
        if (at_operator(p, "*") || at_operator(p, "**"))
            return error_here(p, FV_ERR_UNSUPPORTED, "argument unpacking is not supported");
        fv_frontend_node *argument;
        FV_TRY(parse_expression(p, &argument));
        if (at_operator(p, "=")) {
            if (argument->kind != FV_NODE_NAME || argument->parenthesized)
                return fv_frontend_error_at(FV_ERR_INPUT, p->path, argument->line,
                                            argument->column,
                                            "a keyword argument needs a name before '='");
            fv_frontend_node *keyword;
            FV_TRY(new_node(p, FV_NODE_KEYWORD, argument->line, argument->column, &keyword));
            keyword->text = argument->text;
            keyword->length = argument->length;
            FV_TRY(advance(p));
            FV_TRY(parse_expression(p, &keyword->child));
            argument = keyword;
            keyword_seen = true;
        } else if (keyword_seen) {
            return fv_frontend_error_at(FV_ERR_INPUT, p->path, argument->line, argument->column,
                                        "positional argument follows keyword argument");
        }
        append_node(&call->items, &tail, argument);
        call->count++;
        if (at_operator(p, ",")) {
            FV_TRY(advance(p));
            continue;
        }
        if (!at_operator(p, ")"))
            return error_expected(p, "',' or ')'");
    }
    return advance(p);
}

static fv_status parse_postfix(parser *p, fv_frontend_node **out)
{
    int saved_depth = p->depth;
    FV_TRY(parse_atom(p, out));
    for (;;) {
        fv_frontend_node *base = *out;
        if (at_operator(p, ".")) {
            FV_TRY(enter(p));
            FV_TRY(advance(p));
            if (p->token.kind != FV_TOKEN_NAME)
                return error_expected(p, "a name after '.'");
            FV_TRY(new_node(p, FV_NODE_ATTRIBUTE, base->line, base->column, out));
            (*out)->child = base;
            (*out)->text = p->token.text;
            (*out)->length = (int)p->token.length;
            FV_TRY(advance(p));
        } else if (at_operator(p, "(")) {
            FV_TRY(enter(p));
            FV_TRY(new_node(p, FV_NODE_CALL, base->line, base->column, out));
            (*out)->child = base;
            FV_TRY(parse_arguments(p, *out));
        } else if (at_operator(p, "[")) {
            return error_here(p, FV_ERR_UNSUPPORTED, "subscripts ('[') are not supported");
        } else {
            break;
        }
    }
    p->depth = saved_depth;
    return FV_OK;
}

static fv_status parse_unary(parser *p, fv_frontend_node **out)
{
    if (!at_operator(p, "-") && !at_operator(p, "+"))
        return parse_postfix(p, out);
    FV_TRY(enter(p));
    FV_TRY(new_node(p, FV_NODE_UNARY, p->token.line, p->token.column, out));
    (*out)->operator_char = p->token.text[0];
    FV_TRY(advance(p));
    FV_TRY(parse_unary(p, &(*out)->child));
    p->depth--;
    return FV_OK;
}

/* A left-associative chain of the operators in `operators`. */
static fv_status parse_binary_chain(parser *p, const char *operators,
                                    fv_status (*operand)(parser *, fv_frontend_node **),
                                    fv_frontend_node **out)
{
    int saved_depth = p->depth;
    FV_TRY(operand(p, out));
    while (p->token.kind == FV_TOKEN_OPERATOR && p->token.length == 1 &&
           strchr(operators, p->token.text[0]) != NULL) {
        FV_TRY(enter(p));
        fv_frontend_node *left = *out;
        FV_TRY(new_node(p, FV_NODE_BINARY, left->line, left->column, out));
        (*out)->operator_char = p->token.text[0];
        (*out)->child = left;
        FV_TRY(advance(p));
        FV_TRY(operand(p, &(*out)->right));
    }
    p->depth = saved_depth;
    return FV_OK;
}

static fv_status parse_term(parser *p, fv_frontend_node **out)
{
    return parse_binary_chain(p, "*/", parse_unary, out);
}

static fv_status parse_expression(parser *p, fv_frontend_node **out)
{
    FV_TRY(enter(p));
    FV_TRY(parse_binary_chain(p, "+-", parse_term, out));
    p->depth--;
    return FV_OK;
}

/* --------------------------------------------------------- statements */

static fv_status parse_statement(parser *p, fv_frontend_statement **out);

/* The suite after a compound statement's ':'. */
static fv_status parse_block(parser *p, fv_frontend_statement **body)
{
    FV_TRY(expect_operator(p, ":"));
    if (p->token.kind != FV_TOKEN_NEWLINE)
        return parse_statement(p, body);
    FV_TRY(advance(p));
    if (p->token.kind != FV_TOKEN_INDENT)
        return error_expected(p, "an indented block");
    FV_TRY(advance(p));
    fv_frontend_statement *tail = NULL;
    while (p->token.kind != FV_TOKEN_DEDENT && p->token.kind != FV_TOKEN_END) {
        fv_frontend_statement *statement;
        FV_TRY(parse_statement(p, &statement));
        if (tail == NULL)
            *body = statement;
        else
            tail->next = statement;
        tail = statement;
    }
    return p->token.kind == FV_TOKEN_DEDENT ? advance(p) : FV_OK;
}

/* NAME ('.' NAME)*: returns the first NAME. */
static fv_status parse_dotted(parser *p, fv_frontend_node **root)
{
    if (p->token.kind != FV_TOKEN_NAME)
        return error_expected(p, "a module name");
    FV_TRY(new_node(p, FV_NODE_NAME, p->token.line, p->token.column, root));
    (*root)->text = p->token.text;
    (*root)->length = (int)p->token.length;
    FV_TRY(advance(p));
    while (at_operator(p, ".")) {
        FV_TRY(advance(p));
        if (p->token.kind != FV_TOKEN_NAME)
            return error_expected(p, "a module name after '.'");
        FV_TRY(advance(p));
    }
    return FV_OK;
}

/* An optional "as NAME"; records the first alias of the statement. */
static fv_status parse_alias(parser *p, fv_frontend_statement *statement)
{
    if (!at_keyword(p, "as"))
        return FV_OK;
    fv_frontend_node *alias;
    FV_TRY(new_node(p, FV_NODE_NAME, p->token.line, p->token.column, &alias));
    FV_TRY(advance(p));
    if (p->token.kind != FV_TOKEN_NAME)
        return error_expected(p, "a name after 'as'");
    if (statement->alias == NULL)
        statement->alias = alias;
    return advance(p);
}

static fv_status parse_import(parser *p, fv_frontend_statement *statement)
{
    FV_TRY(advance(p));
    fv_frontend_node *tail = NULL;
    for (;;) {
        fv_frontend_node *root;
        FV_TRY(parse_dotted(p, &root));
        append_node(&statement->names, &tail, root);
        statement->name_count++;
        FV_TRY(parse_alias(p, statement));
        if (!at_operator(p, ","))
            break;
        FV_TRY(advance(p));
    }
    return expect_newline(p);
}

static fv_status parse_from_import(parser *p, fv_frontend_statement *statement)
{
    FV_TRY(advance(p));
    if (at_operator(p, "."))
        return error_here(p, FV_ERR_UNSUPPORTED, "relative imports are not supported");
    FV_TRY(parse_dotted(p, &statement->names));
    statement->name_count = 1;
    if (!at_keyword(p, "import"))
        return error_expected(p, "'import'");
    FV_TRY(advance(p));
    if (at_operator(p, "*")) {
        FV_TRY(advance(p));
        return expect_newline(p);
    }
    bool parenthesized = at_operator(p, "(");
    if (parenthesized)
        FV_TRY(advance(p));
    for (;;) {
        if (p->token.kind != FV_TOKEN_NAME)
            return error_expected(p, "a name to import");
        FV_TRY(advance(p));
        FV_TRY(parse_alias(p, statement));
        if (!at_operator(p, ","))
            break;
        FV_TRY(advance(p));
        if (parenthesized && at_operator(p, ")"))
            break;
    }
    if (parenthesized)
        FV_TRY(expect_operator(p, ")"));
    return expect_newline(p);
}

static fv_status parse_parameter(parser *p, fv_frontend_statement *statement,
                                 fv_frontend_node **tail)
{
    if (at_operator(p, "*") || at_operator(p, "**"))
        return error_here(p, FV_ERR_UNSUPPORTED, "'*' parameters are not supported");
    if (p->token.kind != FV_TOKEN_NAME)
        return error_expected(p, "a parameter name");
    fv_frontend_node *parameter;
    FV_TRY(new_node(p, FV_NODE_NAME, p->token.line, p->token.column, &parameter));
    parameter->text = p->token.text;
    parameter->length = (int)p->token.length;
    append_node(&statement->names, tail, parameter);
    statement->name_count++;
    FV_TRY(advance(p));
    fv_frontend_node *ignored;
    if (at_operator(p, ":")) { /* annotation */
        FV_TRY(advance(p));
        FV_TRY(parse_expression(p, &ignored));
    }
    if (at_operator(p, "=")) { /* default value */
        FV_TRY(advance(p));
        FV_TRY(parse_expression(p, &ignored));
    }
    return FV_OK;
}

static fv_status parse_def(parser *p, fv_frontend_statement *statement)
{
    FV_TRY(advance(p));
    if (p->token.kind != FV_TOKEN_NAME || at_python_keyword(p))
        return error_expected(p, "a function name");
    FV_TRY(new_node(p, FV_NODE_NAME, p->token.line, p->token.column, &statement->name));
    statement->name->text = p->token.text;
    statement->name->length = (int)p->token.length;
    FV_TRY(advance(p));
    FV_TRY(expect_operator(p, "("));
    fv_frontend_node *tail = NULL;
    while (!at_operator(p, ")")) {
        FV_TRY(parse_parameter(p, statement, &tail));
        if (at_operator(p, ","))
            FV_TRY(advance(p));
        else if (!at_operator(p, ")"))
            return error_expected(p, "',' or ')'");
    }
    FV_TRY(advance(p));
    if (at_operator(p, "->")) {
        fv_frontend_node *ignored;
        FV_TRY(advance(p));
        FV_TRY(parse_expression(p, &ignored));
    }
    return parse_block(p, &statement->body);
}

static fv_status parse_with(parser *p, fv_frontend_statement *statement)
{
    FV_TRY(advance(p));
    FV_TRY(parse_expression(p, &statement->value));
    if (!at_keyword(p, "as"))
        return error_expected(p, "'as'");
    FV_TRY(advance(p));
    if (p->token.kind != FV_TOKEN_NAME || at_python_keyword(p))
        return error_expected(p, "a name after 'as'");
    FV_TRY(new_node(p, FV_NODE_NAME, p->token.line, p->token.column, &statement->name));
    statement->name->text = p->token.text;
    statement->name->length = (int)p->token.length;
    FV_TRY(advance(p));
    return parse_block(p, &statement->body);
}

static fv_status check_target(parser *p, const fv_frontend_node *target)
{
    if (target->kind == FV_NODE_NAME && !target->parenthesized)
        return FV_OK;
    return fv_frontend_error_at(FV_ERR_UNSUPPORTED, p->path, target->line, target->column,
                                "only plain names can be assigned to");
}

/* targets '=' value NEWLINE, or an expression statement. */
static fv_status parse_simple(parser *p, fv_frontend_statement *statement)
{
    fv_frontend_node *first;
    FV_TRY(parse_expression(p, &first));
    fv_frontend_node *tail = first;
    int count = 1;
    while (at_operator(p, ",")) {
        FV_TRY(advance(p));
        fv_frontend_node *target;
        FV_TRY(parse_expression(p, &target));
        append_node(&first, &tail, target);
        count++;
    }
    static const char *const augmented[] = {"+=", "-=", "*=", "/=", ":="};
    for (size_t i = 0; i < sizeof augmented / sizeof augmented[0]; i++)
        if (at_operator(p, augmented[i]))
            return error_here(p, FV_ERR_UNSUPPORTED, "'%s' is not supported", augmented[i]);
    if (!at_operator(p, "=")) {
        if (count > 1)
            return error_expected(p, "'='");
        statement->kind = FV_STATEMENT_EXPRESSION;
        statement->value = first;
        return expect_newline(p);
    }
    for (fv_frontend_node *target = first; target != NULL; target = target->next)
        FV_TRY(check_target(p, target));
    FV_TRY(advance(p));
    statement->kind = FV_STATEMENT_ASSIGN;
    statement->targets = first;
    statement->target_count = count;
    FV_TRY(parse_expression(p, &statement->value));
    if (at_operator(p, "="))
        return error_here(p, FV_ERR_UNSUPPORTED, "chained assignment is not supported");
    return expect_newline(p);
}

static fv_status parse_statement(parser *p, fv_frontend_statement **out)
{
    if (p->token.kind == FV_TOKEN_INDENT)
        return error_here(p, FV_ERR_INPUT, "unexpected indent");
    fv_frontend_statement *statement;
    FV_TRY(new_statement(p, FV_STATEMENT_EXPRESSION, &statement));
    *out = statement;
    if (at_keyword(p, "import")) {
        statement->kind = FV_STATEMENT_IMPORT;
        return parse_import(p, statement);
    }
    if (at_keyword(p, "from")) {
        statement->kind = FV_STATEMENT_FROM_IMPORT;
        return parse_from_import(p, statement);
    }
    if (at_keyword(p, "def")) {
        statement->kind = FV_STATEMENT_DEF;
        return parse_def(p, statement);
    }
    if (at_keyword(p, "with")) {
        statement->kind = FV_STATEMENT_WITH;
        return parse_with(p, statement);
    }
    if (at_keyword(p, "pass")) {
        statement->kind = FV_STATEMENT_PASS;
        FV_TRY(advance(p));
        return expect_newline(p);
    }
    if (at_python_keyword(p))
        return error_here(p, FV_ERR_UNSUPPORTED, "unsupported statement '%.*s'",
                          (int)p->token.length, p->token.text);
    return parse_simple(p, statement);
}

fv_status fv_frontend_parse(const char *path, const char *text, size_t size,
                            fv_frontend_syntax *syntax)
{
    memset(syntax, 0, sizeof *syntax);
    if (size > FV_FRONTEND_MAX_FILE_SIZE)
        return fv_frontend_error_at(FV_ERR_INPUT, path, 1, 1,
                                    "the file is larger than %d MiB",
                                    FV_FRONTEND_MAX_FILE_SIZE >> 20);
    parser p = {.path = path, .syntax = syntax};
    fv_frontend_lexer_init(&p.lexer, path, text, size);
    fv_status status;
    fv_frontend_statement *tail = NULL;
    FV_TRY_GOTO(status, advance(&p), failed);
    while (p.token.kind != FV_TOKEN_END) {
        if (p.token.kind == FV_TOKEN_DEDENT || p.token.kind == FV_TOKEN_NEWLINE) {
            FV_TRY_GOTO(status, advance(&p), failed);
            continue;
        }
        fv_frontend_statement *statement;
        FV_TRY_GOTO(status, parse_statement(&p, &statement), failed);
        if (tail == NULL)
            syntax->statements = statement;
        else
            tail->next = statement;
        tail = statement;
    }
    return FV_OK;
failed:
    fv_frontend_syntax_free(syntax);
    return status;
}

/* ------------------------------------------------------ tree helpers */

bool fv_frontend_node_is_name(const fv_frontend_node *node, const char *name)
{
    size_t length = strlen(name);
    return node != NULL && node->kind == FV_NODE_NAME && (size_t)node->length == length &&
           memcmp(node->text, name, length) == 0;
}

bool fv_frontend_dotted_name(const fv_frontend_node *node, char *buffer, size_t size)
{
    buffer[0] = '\0';
    if (node == NULL || size == 0)
        return false;
    if (node->kind == FV_NODE_NAME) {
        if ((size_t)node->length >= size)
            return false;
        memcpy(buffer, node->text, (size_t)node->length);
        buffer[node->length] = '\0';
        return true;
    }
    if (node->kind != FV_NODE_ATTRIBUTE || !fv_frontend_dotted_name(node->child, buffer, size))
        return false;
    size_t used = strlen(buffer);
    if (used + 1 + (size_t)node->length >= size) {
        buffer[0] = '\0';
        return false;
    }
    buffer[used] = '.';
    memcpy(buffer + used + 1, node->text, (size_t)node->length);
    buffer[used + 1 + (size_t)node->length] = '\0';
    return true;
}

bool fv_frontend_literal_number(const fv_frontend_node *node, double *value, bool *is_integer)
{
    double sign = 1;
    while (node != NULL && node->kind == FV_NODE_UNARY) {
        if (node->operator_char == '-')
            sign = -sign;
        node = node->child;
    }
    if (node == NULL || (node->kind != FV_NODE_INTEGER && node->kind != FV_NODE_FLOAT))
        return false;
    *is_integer = node->kind == FV_NODE_INTEGER;
    *value = sign * (*is_integer ? (double)node->integer : node->real);
    return true;
}

bool fv_frontend_literal_integer(const fv_frontend_node *node, int64_t *value)
{
    bool negative = false;
    while (node != NULL && node->kind == FV_NODE_UNARY) {
        if (node->operator_char == '-')
            negative = !negative;
        node = node->child;
    }
    if (node == NULL || node->kind != FV_NODE_INTEGER)
        return false;
    *value = negative ? -node->integer : node->integer;
    return true;
}

fv_status fv_frontend_bind_arguments(const char *path, const fv_frontend_node *call,
                                     const char *function, const char *const *parameters,
                                     int parameter_count, const fv_frontend_node **slots)
{
    for (int i = 0; i < parameter_count; i++)
        slots[i] = NULL;
    int position = 0;
    for (const fv_frontend_node *argument = call->items; argument != NULL;
         argument = argument->next) {
        if (argument->kind != FV_NODE_KEYWORD) {
            if (position >= parameter_count)
                return fv_frontend_error_at(FV_ERR_INPUT, path, argument->line, argument->column,
                                            "%s: too many positional arguments (at most %d)",
                                            function, parameter_count);
            slots[position++] = argument;
            continue;
        }
        int found = -1;
        for (int i = 0; i < parameter_count && found < 0; i++)
            if (strlen(parameters[i]) == (size_t)argument->length &&
                memcmp(parameters[i], argument->text, (size_t)argument->length) == 0)
                found = i;
        if (found < 0)
            return fv_frontend_error_at(FV_ERR_INPUT, path, argument->line, argument->column,
                                        "%s: unknown keyword argument '%.*s'", function,
                                        argument->length, argument->text);
        if (slots[found] != NULL)
            return fv_frontend_error_at(FV_ERR_INPUT, path, argument->line, argument->column,
                                        "%s: argument '%s' given twice", function,
                                        parameters[found]);
        slots[found] = argument->child;
    }
    return FV_OK;
}
