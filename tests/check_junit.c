/* check_junit.c: tests of the JUnit writer (service/junit.h): a small XML
 * parser of our own checks that every report is well-formed UTF-8 XML with
 * the elements and attributes the JUnit schemas require (testsuite counts,
 * testcase name/classname/time, one outcome element each), that statuses and
 * regressions map to the right outcome, that nasty strings survive escaping,
 * and that the file is replaced atomically. */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "service/junit.h"
#include "test_support.h"

/* ------------------------------------------------- a small XML parser */

enum { MAX_ATTRIBUTES = 16 };

typedef struct xml_node {
    char name[64];
    int attribute_count;
    char *attribute_names[MAX_ATTRIBUTES];
    char *attribute_values[MAX_ATTRIBUTES]; /* decoded */
    struct xml_node **children;
    int child_count;
    char *text;                             /* decoded character data, concatenated */
    size_t text_length;
} xml_node;

typedef struct xml_parser {
    const char *at, *end;
    char error[256];
} xml_parser;

static void node_free(xml_node *node)
{
    if (node == NULL)
        return;
    for (int i = 0; i < node->attribute_count; i++) {
        free(node->attribute_names[i]);
        free(node->attribute_values[i]);
    }
    for (int i = 0; i < node->child_count; i++)
        node_free(node->children[i]);
    free(node->children);
    free(node->text);
    free(node);
}

static bool parse_error(xml_parser *p, const char *what)
{
    if (p->error[0] == '\0')
        snprintf(p->error, sizeof p->error, "%s before '%.20s'", what, p->at);
    return false;
}

/* Appends the UTF-8 encoding of `code` to buffer[*length]. */
static void put_utf8(char *buffer, size_t *length, unsigned code)
{
    if (code < 0x80) {
        buffer[(*length)++] = (char)code;
    } else if (code < 0x800) {
        buffer[(*length)++] = (char)(0xC0 | code >> 6);
        buffer[(*length)++] = (char)(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        buffer[(*length)++] = (char)(0xE0 | code >> 12);
        buffer[(*length)++] = (char)(0x80 | (code >> 6 & 0x3F));
        buffer[(*length)++] = (char)(0x80 | (code & 0x3F));
    } else {
        buffer[(*length)++] = (char)(0xF0 | code >> 18);
        buffer[(*length)++] = (char)(0x80 | (code >> 12 & 0x3F));
        buffer[(*length)++] = (char)(0x80 | (code >> 6 & 0x3F));
        buffer[(*length)++] = (char)(0x80 | (code & 0x3F));
    }
}

static bool xml_char(unsigned code)
{
    return code == 0x9 || code == 0xA || code == 0xD || (code >= 0x20 && code <= 0xD7FF) ||
           (code >= 0xE000 && code <= 0xFFFD) || (code >= 0x10000 && code <= 0x10FFFF);
}

/* Decodes one reference after '&' into buffer. */
static bool parse_reference(xml_parser *p, char *buffer, size_t *length)
{
    static const struct { const char *name; char value; } entities[] = {
        {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    for (size_t i = 0; i < sizeof entities / sizeof entities[0]; i++)
        if (strncmp(p->at, entities[i].name, strlen(entities[i].name)) == 0) {
            p->at += strlen(entities[i].name);
            buffer[(*length)++] = entities[i].value;
            return true;
        }
    if (*p->at != '#')
        return parse_error(p, "unknown entity");
    p->at++;
    int base = 10;
    if (*p->at == 'x') {
        base = 16;
        p->at++;
    }
    if (!(base == 16 ? isxdigit((unsigned char)*p->at) : isdigit((unsigned char)*p->at)))
        return parse_error(p, "bad character reference");
    char *stop;
    unsigned long code = strtoul(p->at, &stop, base);
    if (stop == p->at || *stop != ';' || !xml_char((unsigned)code))
        return parse_error(p, "bad character reference");
    p->at = stop + 1;
    put_utf8(buffer, length, (unsigned)code);
    return true;
}

static bool name_character(char c)
{
    return isalnum((unsigned char)c) || (c != '\0' && strchr("_-.:", c) != NULL);
}

static bool parse_name(xml_parser *p, char *name, size_t size)
{
    size_t length = 0;
    while (p->at < p->end && name_character(*p->at)) {
        if (length + 1 >= size)
            return parse_error(p, "name too long");
        name[length++] = *p->at++;
    }
    name[length] = '\0';
    return length > 0 ? true : parse_error(p, "expected a name");
}

static void skip_space(xml_parser *p)
{
    while (p->at < p->end && strchr(" \t\r\n", *p->at) && *p->at)
        p->at++;
}

static bool parse_attribute(xml_parser *p, xml_node *node)
{
    char name[64];
    if (!parse_name(p, name, sizeof name))
        return false;
    skip_space(p);
    if (*p->at != '=')
        return parse_error(p, "expected '='");
    p->at++;
    skip_space(p);
    char quote = *p->at;
    if (quote != '"' && quote != '\'')
        return parse_error(p, "expected a quoted value");
    p->at++;
    const char *close = strchr(p->at, quote);
    if (close == NULL)
        return parse_error(p, "unterminated attribute");
    char *value = malloc((size_t)(close - p->at) * 4 + 1);
    ck_assert_ptr_nonnull(value);
    size_t length = 0;
    while (p->at < close) {
        char c = *p->at++;
        if (c == '<' || c == '\t' || c == '\n' || c == '\r') {
            free(value);
            return parse_error(p, "raw '<' or whitespace that normalization would change");
        }
        if (c == '&') {
            if (!parse_reference(p, value, &length)) {
                free(value);
                return false;
            }
        } else {
            value[length++] = c;
        }
    }
    value[length] = '\0';
    p->at = close + 1;
    if (node->attribute_count == MAX_ATTRIBUTES) {
        free(value);
        return parse_error(p, "too many attributes");
    }
    for (int i = 0; i < node->attribute_count; i++)
        if (strcmp(node->attribute_names[i], name) == 0) {
            free(value);
            return parse_error(p, "duplicate attribute");
        }
    node->attribute_names[node->attribute_count] = strdup(name);
    node->attribute_values[node->attribute_count++] = value;
    return true;
}

static bool parse_element(xml_parser *p, xml_node **result);

static bool add_text(xml_parser *p, xml_node *node)
{
    const char *stop = p->at;
    while (stop < p->end && *stop != '<')
        stop++;
    char *grown = realloc(node->text, node->text_length + (size_t)(stop - p->at) * 4 + 1);
    ck_assert_ptr_nonnull(grown);
    node->text = grown;
    while (p->at < stop) {
        if (strncmp(p->at, "]]>", 3) == 0)
            return parse_error(p, "']]>' in content");
        char c = *p->at++;
        if (c == '&') {
            if (!parse_reference(p, node->text, &node->text_length))
                return false;
        } else {
            node->text[node->text_length++] = c;
        }
    }
    node->text[node->text_length] = '\0';
    return true;
}

static bool parse_content(xml_parser *p, xml_node *node)
{
    for (;;) {
        if (p->at >= p->end)
            return parse_error(p, "unterminated element");
        if (strncmp(p->at, "</", 2) == 0) {
            p->at += 2;
            char name[64];
            if (!parse_name(p, name, sizeof name))
                return false;
            if (strcmp(name, node->name) != 0)
                return parse_error(p, "mismatched end tag");
            skip_space(p);
            if (*p->at != '>')
                return parse_error(p, "expected '>'");
            p->at++;
            return true;
        }
        if (*p->at == '<') {
            xml_node *child = NULL;
            if (!parse_element(p, &child)) {
                node_free(child);
                return false;
            }
            size_t size = sizeof(xml_node *) * (size_t)(node->child_count + 1);
            xml_node **grown = realloc(node->children, size);
            ck_assert_ptr_nonnull(grown);
            node->children = grown;
            node->children[node->child_count++] = child;
        } else if (!add_text(p, node)) {
            return false;
        }
    }
}

static bool parse_element(xml_parser *p, xml_node **result)
{
    if (*p->at != '<')
        return parse_error(p, "expected '<'");
    p->at++;
    xml_node *node = calloc(1, sizeof *node);
    ck_assert_ptr_nonnull(node);
    *result = node;
    if (!parse_name(p, node->name, sizeof node->name))
        return false;
    for (;;) {
        bool spaced = p->at < p->end && strchr(" \t\r\n", *p->at) && *p->at;
        skip_space(p);
        if (strncmp(p->at, "/>", 2) == 0) {
            p->at += 2;
            return true;
        }
        if (*p->at == '>') {
            p->at++;
            return parse_content(p, node);
        }
        if (!spaced)
            return parse_error(p, "attributes must be separated by space");
        if (!parse_attribute(p, node))
            return false;
    }
}

/* True if `bytes` is valid UTF-8 of XML characters only. */
static bool valid_xml_text(const unsigned char *bytes, size_t size)
{
    for (size_t i = 0; i < size;) {
        unsigned code, length;
        if (bytes[i] < 0x80) { code = bytes[i]; length = 1; }
        else if ((bytes[i] & 0xE0) == 0xC0) { code = bytes[i] & 0x1F; length = 2; }
        else if ((bytes[i] & 0xF0) == 0xE0) { code = bytes[i] & 0x0F; length = 3; }
        else if ((bytes[i] & 0xF8) == 0xF0) { code = bytes[i] & 0x07; length = 4; }
        else return false;
        if (i + length > size)
            return false;
        for (unsigned k = 1; k < length; k++) {
            if ((bytes[i + k] & 0xC0) != 0x80)
                return false;
            code = code << 6 | (bytes[i + k] & 0x3F);
        }
        static const unsigned minimum[] = {0, 0, 0x80, 0x800, 0x10000};
        if (code < minimum[length] || !xml_char(code))
            return false;
        i += length;
    }
    return true;
}

/* Parses a whole document; NULL with *error set when it is not well-formed. */
static xml_node *parse_document(const char *text, size_t size, char *error, size_t error_size)
{
    xml_parser p = {.at = text, .end = text + size};
    if (!valid_xml_text((const unsigned char *)text, size)) {
        snprintf(error, error_size, "not UTF-8 of XML characters");
        return NULL;
    }
    const char *declaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";
    if (strncmp(text, declaration, strlen(declaration)) != 0) {
        snprintf(error, error_size, "no XML declaration");
        return NULL;
    }
    p.at += strlen(declaration);
    skip_space(&p);
    xml_node *root = NULL;
    bool ok = parse_element(&p, &root);
    skip_space(&p);
    if (ok && p.at != p.end)
        ok = parse_error(&p, "content after the root element");
    if (!ok) {
        snprintf(error, error_size, "%s", p.error);
        node_free(root);
        return NULL;
    }
    return root;
}

static const char *attribute(const xml_node *node, const char *name)
{
    for (int i = 0; i < node->attribute_count; i++)
        if (strcmp(node->attribute_names[i], name) == 0)
            return node->attribute_values[i];
    return NULL;
}

static const xml_node *child(const xml_node *node, const char *name)
{
    for (int i = 0; i < node->child_count; i++)
        if (strcmp(node->children[i]->name, name) == 0)
            return node->children[i];
    return NULL;
}

static int child_count(const xml_node *node, const char *name)
{
    int count = 0;
    for (int i = 0; i < node->child_count; i++)
        count += strcmp(node->children[i]->name, name) == 0;
    return count;
}

/* --------------------------------------------- the schema's requirements */

static int integer_attribute(const xml_node *node, const char *name)
{
    const char *value = attribute(node, name);
    ck_assert_msg(value != NULL, "<%s> has no %s", node->name, name);
    char *end;
    long number = strtol(value, &end, 10);
    ck_assert_msg(*value && *end == '\0' && number >= 0, "<%s %s=\"%s\"> is not a count",
                  node->name, name, value);
    return (int)number;
}

static void check_decimal_attribute(const xml_node *node, const char *name)
{
    const char *value = attribute(node, name);
    ck_assert_msg(value != NULL, "<%s> has no %s", node->name, name);
    char *end;
    double number = strtod(value, &end);
    ck_assert_msg(*value && *end == '\0' && isfinite(number) && number >= 0 &&
                      strspn(value, "0123456789.") == strlen(value),
                  "<%s %s=\"%s\"> is not a decimal", node->name, name, value);
}

typedef struct outcome_counts {
    int tests, failures, errors, skipped;
} outcome_counts;

/* A testcase: name, classname, time; at most one outcome element, which has
 * the attributes the schema requires. */
static void check_testcase(const xml_node *testcase, outcome_counts *counts)
{
    ck_assert_msg(attribute(testcase, "name") != NULL, "testcase without name");
    ck_assert_msg(attribute(testcase, "classname") != NULL, "testcase without classname");
    check_decimal_attribute(testcase, "time");
    int failures = child_count(testcase, "failure"), errors = child_count(testcase, "error");
    int skipped = child_count(testcase, "skipped");
    ck_assert_int_le(failures + errors + skipped, 1);
    for (int i = 0; i < testcase->child_count; i++) {
        const xml_node *c = testcase->children[i];
        ck_assert_msg(strcmp(c->name, "properties") == 0 || strcmp(c->name, "failure") == 0 ||
                          strcmp(c->name, "error") == 0 || strcmp(c->name, "skipped") == 0 ||
                          strcmp(c->name, "system-out") == 0 || strcmp(c->name, "system-err") == 0,
                      "unexpected <%s> in a testcase", c->name);
        if (strcmp(c->name, "failure") == 0 || strcmp(c->name, "error") == 0) {
            ck_assert_ptr_nonnull(attribute(c, "message"));
            ck_assert_ptr_nonnull(attribute(c, "type"));
        }
        if (strcmp(c->name, "properties") == 0)
            for (int k = 0; k < c->child_count; k++) {
                ck_assert_str_eq(c->children[k]->name, "property");
                ck_assert_ptr_nonnull(attribute(c->children[k], "name"));
                ck_assert_ptr_nonnull(attribute(c->children[k], "value"));
            }
    }
    counts->tests++;
    counts->failures += failures;
    counts->errors += errors;
    counts->skipped += skipped;
}

/* Reads and parses `path`, checks the JUnit structure and returns the
 * <testsuite> element's owner (the root) for further checks. */
static xml_node *read_report(const char *path, outcome_counts *counts)
{
    size_t size = 0;
    char *text = fv_test_read_file(path, &size);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    ck_assert_uint_eq(strlen(text), size); /* no NUL inside */
    char error[300] = "";
    xml_node *root = parse_document(text, size, error, sizeof error);
    ck_assert_msg(root != NULL, "not well-formed: %s\n%s", error, text);
    free(text);
    ck_assert_str_eq(root->name, "testsuites");
    ck_assert_int_eq(child_count(root, "testsuite"), 1);
    const xml_node *suite = child(root, "testsuite");
    static const char *const required[] = {"name", "tests", "failures", "errors", "skipped",
                                           "time", "timestamp", "hostname"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        ck_assert_msg(attribute(suite, required[i]) != NULL, "testsuite without %s", required[i]);
    check_decimal_attribute(suite, "time");
    const char *timestamp = attribute(suite, "timestamp");
    ck_assert_msg(strlen(timestamp) == 19 && timestamp[4] == '-' && timestamp[10] == 'T' &&
                      timestamp[16] == ':',
                  "timestamp '%s' is not YYYY-MM-DDTHH:MM:SS", timestamp);
    ck_assert_int_eq(child_count(suite, "properties"), 1);
    ck_assert_int_eq(child_count(suite, "system-out"), 1);
    ck_assert_int_eq(child_count(suite, "system-err"), 1);
    *counts = (outcome_counts){0};
    for (int i = 0; i < suite->child_count; i++)
        if (strcmp(suite->children[i]->name, "testcase") == 0)
            check_testcase(suite->children[i], counts);
    ck_assert_int_eq(integer_attribute(suite, "tests"), counts->tests);
    ck_assert_int_eq(integer_attribute(suite, "failures"), counts->failures);
    ck_assert_int_eq(integer_attribute(suite, "errors"), counts->errors);
    ck_assert_int_eq(integer_attribute(suite, "skipped"), counts->skipped);
    ck_assert_int_eq(root->attribute_count, 0); /* Ant's schema: no attributes */
    return root;
}

static const xml_node *find_testcase(const xml_node *root, const char *name)
{
    const xml_node *suite = child(root, "testsuite");
    for (int i = 0; i < suite->child_count; i++) {
        const char *case_name = attribute(suite->children[i], "name");
        if (strcmp(suite->children[i]->name, "testcase") == 0 && case_name != NULL &&
            strcmp(case_name, name) == 0)
            return suite->children[i];
    }
    ck_abort_msg("no testcase named '%s'", name);
    return NULL;
}

static const char *property(const xml_node *testcase, const char *name)
{
    const xml_node *properties = child(testcase, "properties");
    ck_assert_ptr_nonnull(properties);
    for (int i = 0; i < properties->child_count; i++)
        if (strcmp(attribute(properties->children[i], "name"), name) == 0)
            return attribute(properties->children[i], "value");
    ck_abort_msg("no property '%s'", name);
    return NULL;
}

static bool has_property(const xml_node *testcase, const char *name)
{
    const xml_node *properties = child(testcase, "properties");
    for (int i = 0; properties != NULL && i < properties->child_count; i++)
        if (strcmp(attribute(properties->children[i], "name"), name) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------ fixtures */

static fv_result make_result(const char *case_id, const char *family, fv_result_status status)
{
    fv_result r;
    fv_result_init(&r, case_id, family, "bf16", "64x256", 0, "tests/cases/small.sweep");
    r.status = status;
    r.wall_ms = 1250;
    snprintf(r.schedulers, sizeof r.schedulers, "inner_reduction+outer_reduction");
    snprintf(r.repro, sizeof r.repro, "fuservalidate run tests/cases --filter '%s'", case_id);
    return r;
}

/* Every status once. */
static int all_statuses(fv_result *results)
{
    results[0] = make_result("ln/pass", "ln", FV_RESULT_PASS);
    results[0].bandwidth_gbs = 2500.25;
    results[0].percent_of_copy = 83.5;
    results[0].percent_of_sized_copy = 97.25;
    results[0].time_median_ms = 0.0125;
    results[0].worst_ratio = 0.25;
    results[0].elements = 16384;
    results[1] = make_result("ln/fail", "ln", FV_RESULT_FAIL);
    results[1].elements = 27136;
    results[1].mismatches = 89;
    results[1].worst_ratio = 3.5;
    snprintf(results[1].stage, sizeof results[1].stage, "compare");
    snprintf(results[1].message, sizeof results[1].message, "output dx: 89 of 27136 mismatched");
    results[2] = make_result("ln/error", "ln", FV_RESULT_ERROR);
    results[3] = make_result("ln/crash", "ln", FV_RESULT_CRASH);
    snprintf(results[3].message, sizeof results[3].message, "worker killed by signal 11");
    results[4] = make_result("ln/timeout", "ln", FV_RESULT_TIMEOUT);
    results[5] = make_result("rms/unsupported", "rms", FV_RESULT_UNSUPPORTED);
    results[6] = make_result("rms/skipped", "rms", FV_RESULT_SKIPPED);
    results[7] = make_result("rms/compiled", "rms", FV_RESULT_COMPILED);
    return 8;
}

/* -------------------------------------------------------------- tests */

START_TEST(statuses_map_to_outcomes)
{
    fv_result results[8];
    int count = all_statuses(results);
    const char *path = fv_test_path("statuses.xml");
    FV_ASSERT_OK(fv_junit_write(path, "nightly", results, count, NULL, 0, 42.5));
    outcome_counts counts;
    xml_node *root = read_report(path, &counts);
    ck_assert_int_eq(counts.tests, 8);
    ck_assert_int_eq(counts.failures, 1);
    ck_assert_int_eq(counts.errors, 3);
    ck_assert_int_eq(counts.skipped, 2);
    const xml_node *suite = child(root, "testsuite");
    ck_assert_str_eq(attribute(suite, "name"), "nightly");
    ck_assert_str_eq(attribute(suite, "time"), "42.500");
    const xml_node *pass = find_testcase(root, "ln/pass");
    ck_assert_str_eq(attribute(pass, "classname"), "ln");
    ck_assert_str_eq(attribute(pass, "time"), "1.250");
    ck_assert_int_eq(pass->child_count, 2); /* properties, system-out */
    ck_assert_str_eq(property(pass, "bandwidth_gbs"), "2500.25");
    ck_assert_str_eq(property(pass, "percent_of_copy"), "83.5");
    ck_assert_str_eq(property(pass, "percent_of_sized_copy"), "97.25");
    ck_assert_str_eq(property(pass, "median_ms"), "0.0125");
    ck_assert_str_eq(property(pass, "worst_ratio"), "0.25");
    ck_assert_str_eq(property(pass, "mismatches"), "0");
    ck_assert_str_eq(property(pass, "scheduler"), "inner_reduction+outer_reduction");
    ck_assert_str_eq(child(pass, "system-out")->text, results[0].repro);
    /* a case whose sized copy was not measured has no such property */
    ck_assert(!has_property(find_testcase(root, "ln/fail"), "percent_of_sized_copy"));
    ck_assert(has_property(find_testcase(root, "ln/fail"), "percent_of_copy"));
    const xml_node *failure = child(find_testcase(root, "ln/fail"), "failure");
    ck_assert_ptr_nonnull(failure);
    ck_assert_str_eq(attribute(failure, "type"), "fail");
    ck_assert_ptr_nonnull(strstr(attribute(failure, "message"), "89 of 27136 elements"));
    ck_assert_ptr_nonnull(strstr(failure->text, "mismatches: 89 of 27136 elements"));
    ck_assert_ptr_nonnull(strstr(failure->text, "repro: fuservalidate run"));
    const xml_node *crash = child(find_testcase(root, "ln/crash"), "error");
    ck_assert_str_eq(attribute(crash, "type"), "crash");
    ck_assert_ptr_nonnull(strstr(attribute(crash, "message"), "signal 11"));
    ck_assert_ptr_nonnull(child(find_testcase(root, "ln/timeout"), "error"));
    ck_assert_ptr_nonnull(child(find_testcase(root, "ln/error"), "error"));
    ck_assert_ptr_nonnull(child(find_testcase(root, "rms/unsupported"), "skipped"));
    ck_assert_ptr_nonnull(child(find_testcase(root, "rms/skipped"), "skipped"));
    ck_assert_int_eq(child_count(find_testcase(root, "rms/compiled"), "failure"), 0);
    node_free(root);
}
END_TEST

START_TEST(regressions_are_failures)
{
    fv_result results[3] = {make_result("ln/slower", "ln", FV_RESULT_PASS),
                            make_result("ln/wrong_and_slower", "ln", FV_RESULT_FAIL),
                            make_result("ln/steady", "ln", FV_RESULT_PASS)};
    fv_junit_regression regressions[3] = {
        {.case_id = "ln/slower", .family = "ln", .old_median_ms = 1.0, .new_median_ms = 1.25,
         .p_value = 1.5e-6, .alpha = 0.01, .threshold = 0.05, .old_samples = 20,
         .new_samples = 20},
        {.case_id = "ln/wrong_and_slower", .family = "ln", .old_median_ms = 2.0,
         .new_median_ms = 3.0, .p_value = 1e-4, .alpha = 0.01, .threshold = 0.05,
         .old_samples = 9, .new_samples = 9},
        {.case_id = "rms/only_in_regressions", .family = "rms", .old_median_ms = 1.0,
         .new_median_ms = 2.0, .p_value = 1e-3, .alpha = 0.01, .threshold = 0.05,
         .old_samples = 5, .new_samples = 5},
    };
    const char *path = fv_test_path("regressions.xml");
    FV_ASSERT_OK(fv_junit_write(path, NULL, results, 3, regressions, 3, -1));
    outcome_counts counts;
    xml_node *root = read_report(path, &counts);
    ck_assert_int_eq(counts.tests, 4);
    ck_assert_int_eq(counts.failures, 3);
    ck_assert_int_eq(counts.errors, 0);
    ck_assert_str_eq(attribute(child(root, "testsuite"), "name"), "fuservalidate");
    /* Suite time: the sum of the case times when none is given. */
    ck_assert_str_eq(attribute(child(root, "testsuite"), "time"), "3.750");
    const xml_node *slower = find_testcase(root, "ln/slower");
    const xml_node *failure = child(slower, "failure");
    ck_assert_str_eq(attribute(failure, "type"), "performance_regression");
    const char *message = attribute(failure, "message");
    ck_assert_msg(strstr(message, "1 ms -> 1.25 ms") && strstr(message, "+25.0%") &&
                      strstr(message, "p = 1.5e-06") && strstr(message, "Mann-Whitney"),
                  "regression message: %s", message);
    ck_assert_str_eq(property(slower, "baseline_median_ms"), "1");
    ck_assert_str_eq(property(slower, "p_value"), "1.5e-06");
    /* A wrong answer that also regressed: one failure naming both. */
    const xml_node *both = find_testcase(root, "ln/wrong_and_slower");
    ck_assert_int_eq(child_count(both, "failure"), 1);
    ck_assert_str_eq(attribute(child(both, "failure"), "type"), "fail");
    ck_assert_ptr_nonnull(strstr(child(both, "failure")->text, "performance regression"));
    ck_assert_int_eq(child_count(find_testcase(root, "ln/steady"), "failure"), 0);
    const xml_node *lone = find_testcase(root, "rms/only_in_regressions");
    ck_assert_str_eq(attribute(lone, "classname"), "rms");
    ck_assert_ptr_nonnull(child(lone, "failure"));
    node_free(root);
}
END_TEST

/* Nasty bytes in every string field: XML specials, "]]>", control characters,
 * invalid UTF-8, non-characters, valid multi-byte characters, and a field
 * with no NUL at all. */
START_TEST(nasty_strings_are_escaped)
{
    fv_result r = make_result("x", "fam<&>\"'ily", FV_RESULT_FAIL);
    const char *nasty_id = "a<b>&c\"d'e]]>f\x01g\x1b[31mh\ti\nj\rk\xff"
                           "l\xc0\xafm\xed\xa0\x80n\xef\xbf\xbfo"
                           "\xc2\xb5\xe2\x82\xac\xf0\x9d\x84\x9e"; /* U+00B5 U+20AC U+1D11E */
    snprintf(r.case_id, sizeof r.case_id, "%s", nasty_id);
    snprintf(r.message, sizeof r.message, "<![CDATA[ x ]]> &amp; </failure> \x7f\x80 %%s %%n");
    snprintf(r.stage, sizeof r.stage, "st\"age");
    memset(r.schedulers, 'A', sizeof r.schedulers); /* no terminating NUL */
    snprintf(r.repro, sizeof r.repro, "%s", "fuservalidate run --filter '<&>'\xe2\x82"); /* cut */
    const char *path = fv_test_path("nasty.xml");
    FV_ASSERT_OK(fv_junit_write(path, "suite \"<&>\"\n", &r, 1, NULL, 0, 1));
    outcome_counts counts;
    xml_node *root = read_report(path, &counts);
    ck_assert_int_eq(counts.failures, 1);
    const xml_node *suite = child(root, "testsuite");
    ck_assert_str_eq(attribute(suite, "name"), "suite \"<&>\"\n");
    const xml_node *testcase = child(suite, "testcase");
    /* What survives: every valid character, with U+FFFD for each bad byte. */
    const char *expected_id = "a<b>&c\"d'e]]>f\xef\xbf\xbdg\xef\xbf\xbd[31mh\ti\nj\rk\xef\xbf\xbd"
                              "l\xef\xbf\xbd\xef\xbf\xbdm\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                              "n\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdo\xc2\xb5\xe2\x82\xac"
                              "\xf0\x9d\x84\x9e";
    ck_assert_str_eq(attribute(testcase, "name"), expected_id);
    ck_assert_str_eq(attribute(testcase, "classname"), "fam<&>\"'ily");
    char schedulers[sizeof r.schedulers + 1];
    memset(schedulers, 'A', sizeof r.schedulers);
    schedulers[sizeof r.schedulers] = '\0';
    ck_assert_str_eq(property(testcase, "scheduler"), schedulers);
    const xml_node *failure = child(testcase, "failure");
    ck_assert_ptr_nonnull(
        strstr(failure->text, "<![CDATA[ x ]]> &amp; </failure> \x7f\xef\xbf\xbd"));
    ck_assert_ptr_nonnull(strstr(attribute(failure, "message"), "st\"age"));
    ck_assert_str_eq(child(testcase, "system-out")->text,
                     "fuservalidate run --filter '<&>'\xef\xbf\xbd\xef\xbf\xbd");
    node_free(root);
}
END_TEST

/* The checker itself rejects what is not well-formed. */
START_TEST(checker_rejects_malformed_xml)
{
    static const char *const bad[] = {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a><b></a>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a x=\"1\" x=\"2\"/>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a x=\"<\"/>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>&bogus;</a>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>]]></a>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>\x01</a>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>\xff</a>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>&#1;</a>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a/><b/>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char error[300] = "";
        xml_node *root = parse_document(bad[i], strlen(bad[i]), error, sizeof error);
        ck_assert_msg(root == NULL, "accepted: %s", bad[i]);
    }
    const char *good =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a x='&#10;&lt;'>t&amp;<b/></a>\n";
    char error[300] = "";
    xml_node *root = parse_document(good, strlen(good), error, sizeof error);
    ck_assert_msg(root != NULL, "rejected: %s", error);
    ck_assert_str_eq(attribute(root, "x"), "\n<");
    ck_assert_str_eq(root->text, "t&");
    node_free(root);
}
END_TEST

static int count_entries(const char *directory)
{
    DIR *dir = opendir(directory);
    ck_assert_ptr_nonnull(dir);
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL)
        count += entry->d_name[0] != '.';
    closedir(dir);
    return count;
}

START_TEST(writes_atomically)
{
    char directory[1024];
    snprintf(directory, sizeof directory, "%s", fv_test_path("atomic"));
    ck_assert_int_eq(mkdir(directory, 0755), 0);
    char path[1100];
    snprintf(path, sizeof path, "%s/junit.xml", directory);
    ck_assert_int_eq(fv_test_write_file(path, "old content"), 0);
    fv_result results[8];
    int count = all_statuses(results);
    FV_ASSERT_OK(fv_junit_write(path, "s", results, count, NULL, 0, 1));
    ck_assert_int_eq(count_entries(directory), 1); /* replaced, no temporary left */
    outcome_counts counts;
    node_free(read_report(path, &counts));
    ck_assert_int_eq(counts.tests, count);
    struct stat info;
    ck_assert_int_eq(stat(path, &info), 0);
    ck_assert_int_eq(info.st_mode & 0777, 0644);
    /* An empty report is still valid JUnit. */
    FV_ASSERT_OK(fv_junit_write(path, "s", NULL, 0, NULL, 0, 0));
    node_free(read_report(path, &counts));
    ck_assert_int_eq(counts.tests, 0);
    /* Unwritable places fail with FV_ERR_IO and leave nothing behind. */
    char missing[1200];
    snprintf(missing, sizeof missing, "%s/no/such/dir/junit.xml", directory);
    ck_assert_int_eq(fv_junit_write(missing, "s", results, count, NULL, 0, 1), FV_ERR_IO);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "no/such/dir/junit.xml"));
    ck_assert_int_eq(fv_junit_write(directory, "s", results, count, NULL, 0, 1), FV_ERR_IO);
    ck_assert_int_eq(count_entries(directory), 1);
    ck_assert_int_eq(fv_junit_write(NULL, "s", results, count, NULL, 0, 1), FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_junit_write(path, "s", NULL, 2, NULL, 0, 1), FV_ERR_INTERNAL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("junit");
    TCase *structure = tcase_create("structure");
    tcase_add_test(structure, statuses_map_to_outcomes);
    tcase_add_test(structure, regressions_are_failures);
    tcase_add_test(structure, checker_rejects_malformed_xml);
    suite_add_tcase(suite, structure);
    TCase *escaping = tcase_create("escaping");
    tcase_add_test(escaping, nasty_strings_are_escaped);
    suite_add_tcase(suite, escaping);
    TCase *files = tcase_create("files");
    tcase_add_test(files, writes_atomically);
    suite_add_tcase(suite, files);
    return suite;
}

int main(void)
{
    return fv_test_run_suite(make_suite());
}
