/* h5util.c: HDF5 setup, error translation, typed attributes and the common
 * file-access property list. */
#include "common/h5util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DESCRIPTION_CAPACITY = 512,
    MESSAGE_CAPACITY = 1024,
    MAX_STRING_ATTRIBUTE_BYTES = 64 << 20 /* a larger attribute is not one of ours */
};

/* ------------------------------------------------------------------ setup */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static herr_t init_result = -1;
/* In a thread-safe HDF5 build each thread has its own default error stack,
 * and with it its own automatic printing: it is turned off per thread. */
static _Thread_local bool thread_quiet;

static void initialize(void)
{
    init_result = H5open();
}

fv_status fv_h5_init(void)
{
    if (pthread_once(&init_once, initialize) != 0 || init_result < 0)
        FV_FAIL(FV_ERR_HDF5, "cannot initialize the HDF5 library");
    if (!thread_quiet) {
        if (H5Eset_auto2(H5E_DEFAULT, NULL, NULL) < 0)
            FV_FAIL(FV_ERR_HDF5, "cannot turn off HDF5's error printing");
        thread_quiet = true;
    }
    return FV_OK;
}

/* ----------------------------------------------------------------- errors */

typedef struct stack_summary {
    bool found;              /* an innermost entry was seen */
    bool checksum;           /* some entry reports a checksum failure */
    char innermost[DESCRIPTION_CAPACITY];
} stack_summary;

static _Thread_local bool last_failure_checksum;

static herr_t summarize_entry(unsigned position, const H5E_error2_t *entry, void *data)
{
    stack_summary *summary = data;
    const char *description = entry->desc ? entry->desc : "";
    /* HDF5 1.10 has no checksum error class: fletcher32 and metadata checksum
     * failures say so in their descriptions. */
    if (strcasestr(description, "checksum") != NULL)
        summary->checksum = true;
    if (position == 0) {
        snprintf(summary->innermost, sizeof summary->innermost, "%s: %s",
                 entry->func_name ? entry->func_name : "?", description);
        summary->found = true;
    }
    return 0;
}

fv_status fv_h5_raise(fv_status status, const char *file, int line, const char *path,
                      const char *format, ...)
{
    stack_summary summary = {0};
    /* Walking upward starts at the innermost entry (position 0). */
    if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, summarize_entry, &summary) < 0 || !summary.found)
        snprintf(summary.innermost, sizeof summary.innermost, "no HDF5 error detail");
    last_failure_checksum = summary.checksum;
    /* The stack is in our message now; its entries would otherwise stay
     * allocated until the thread's next HDF5 call (or, at its exit, leak). */
    H5Eclear2(H5E_DEFAULT);

    char what[MESSAGE_CAPACITY];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    if (path != NULL)
        return fv_error_raise(status, file, line, "%s in %s: %s", what, path, summary.innermost);
    return fv_error_raise(status, file, line, "%s: %s", what, summary.innermost);
}

bool fv_h5_last_failure_was_checksum(void) { return last_failure_checksum; }

/* ------------------------------------------------------------ identifiers */

herr_t fv_h5_close(hid_t *id)
{
    if (*id < 0)
        return 0;
    herr_t result;
    switch (H5Iget_type(*id)) {
    case H5I_FILE: result = H5Fclose(*id); break;
    case H5I_GROUP: result = H5Gclose(*id); break;
    case H5I_DATASET: result = H5Dclose(*id); break;
    case H5I_DATASPACE: result = H5Sclose(*id); break;
    case H5I_DATATYPE: result = H5Tclose(*id); break;
    case H5I_ATTR: result = H5Aclose(*id); break;
    case H5I_GENPROP_LST: result = H5Pclose(*id); break;
    default: result = -1; break;
    }
    *id = H5I_INVALID_HID;
    return result;
}

fv_status fv_h5_file_access(hid_t *access)
{
    FV_TRY(fv_h5_init());
    fv_status status = FV_OK;
    hid_t list = H5Pcreate(H5P_FILE_ACCESS);
    FV_H5_CHECK(list, NULL, "creating a file-access property list");
    FV_H5_CHECK_GOTO(status, H5Pset_fapl_sec2(list), fail, NULL, "selecting the sec2 driver");
#if H5_VERSION_GE(1, 10, 7)
    FV_H5_CHECK_GOTO(status, H5Pset_file_locking(list, false, true), fail, NULL,
                     "disabling file locking");
#endif
    FV_H5_CHECK_GOTO(status, H5Pset_libver_bounds(list, H5F_LIBVER_V110, H5F_LIBVER_V110),
                     fail, NULL, "setting the file format bounds");
    FV_H5_CHECK_GOTO(status, H5Pset_fclose_degree(list, H5F_CLOSE_STRONG), fail, NULL,
                     "setting the file close degree");
    *access = list;
    return FV_OK;
fail:
    fv_h5_close(&list);
    return status;
}

/* ------------------------------------------------------- attribute writing */

/* Creates (replacing) attribute `name` of `file_type` and `space`, and writes
 * `data` given in `memory_type`. */
static fv_status write_attribute(hid_t object, const char *name, hid_t file_type,
                                 hid_t memory_type, hid_t space, const void *data,
                                 const char *path)
{
    htri_t exists = H5Aexists(object, name);
    FV_H5_CHECK(exists, path, "looking up attribute '%s'", name);
    if (exists > 0)
        FV_H5_CHECK(H5Adelete(object, name), path, "replacing attribute '%s'", name);
    hid_t attribute = H5Acreate2(object, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    FV_H5_CHECK(attribute, path, "creating attribute '%s'", name);
    fv_status status = FV_OK;
    if (H5Awrite(attribute, memory_type, data) < 0)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path,
                             "writing attribute '%s'", name);
    if (H5Aclose(attribute) < 0 && status == FV_OK)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path,
                             "closing attribute '%s'", name);
    return status;
}

static fv_status write_scalar_attribute(hid_t object, const char *name, hid_t file_type,
                                        hid_t memory_type, const void *data, const char *path)
{
    hid_t space = H5Screate(H5S_SCALAR);
    FV_H5_CHECK(space, path, "creating a dataspace for attribute '%s'", name);
    fv_status status = write_attribute(object, name, file_type, memory_type, space, data, path);
    H5Sclose(space);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

fv_status fv_h5_write_string_attribute(hid_t object, const char *name, const char *value,
                                       const char *path)
{
    const char *text = value ? value : "";
    hid_t type = H5Tcopy(H5T_C_S1);
    FV_H5_CHECK(type, path, "creating a string type for attribute '%s'", name);
    fv_status status = FV_OK;
    FV_H5_CHECK_GOTO(status, H5Tset_size(type, H5T_VARIABLE), done, path,
                     "sizing a string type for attribute '%s'", name);
    FV_H5_CHECK_GOTO(status, H5Tset_cset(type, H5T_CSET_UTF8), done, path,
                     "setting the character set of attribute '%s'", name);
    FV_TRY_GOTO(status, write_scalar_attribute(object, name, type, type, &text, path), done);
done:
    H5Tclose(type);
    return status;
}

fv_status fv_h5_write_int64_attribute(hid_t object, const char *name, int64_t value,
                                      const char *path)
{
    FV_TRY(write_scalar_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, path));
    return FV_OK;
}

fv_status fv_h5_write_uint64_attribute(hid_t object, const char *name, uint64_t value,
                                       const char *path)
{
    FV_TRY(write_scalar_attribute(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value,
                                  path));
    return FV_OK;
}

fv_status fv_h5_write_double_attribute(hid_t object, const char *name, double value,
                                       const char *path)
{
    FV_TRY(write_scalar_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value,
                                  path));
    return FV_OK;
}

fv_status fv_h5_write_int64_array_attribute(hid_t object, const char *name, int count,
                                            const int64_t *values, const char *path)
{
    if (count < 0)
        FV_FAIL(FV_ERR_INTERNAL, "negative element count %d for attribute '%s'", count, name);
    hsize_t extent = (hsize_t)count;
    hid_t space = H5Screate_simple(1, &extent, NULL);
    FV_H5_CHECK(space, path, "creating a dataspace for attribute '%s'", name);
    static const int64_t none[1] = {0};
    fv_status status = write_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space,
                                       count > 0 ? values : none, path);
    H5Sclose(space);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* ------------------------------------------------------- attribute reading */

/* An open attribute with its type, element count and type class. */
typedef struct open_attribute {
    hid_t attribute;
    hid_t type;
    hssize_t elements;
    H5T_class_t type_class;
} open_attribute;

static void close_attribute(open_attribute *open)
{
    fv_h5_close(&open->type);
    fv_h5_close(&open->attribute);
}

/* Opens attribute `name` and checks its class (and, if `scalar`, that it has
 * exactly one element).  On failure nothing stays open. */
static fv_status open_checked(hid_t object, const char *name, const char *path,
                              H5T_class_t expected_class, bool scalar, open_attribute *open)
{
    *open = (open_attribute){H5I_INVALID_HID, H5I_INVALID_HID, 0, H5T_NO_CLASS};
    htri_t exists = H5Aexists(object, name);
    FV_H5_CHECK(exists, path, "looking up attribute '%s'", name);
    if (exists == 0)
        FV_FAIL(FV_ERR_NOT_FOUND, "attribute '%s' is missing in %s", name, path);
    fv_status status = FV_OK;
    hid_t space = H5I_INVALID_HID;
    open->attribute = H5Aopen(object, name, H5P_DEFAULT);
    FV_H5_CHECK_GOTO(status, open->attribute, fail, path, "opening attribute '%s'", name);
    open->type = H5Aget_type(open->attribute);
    FV_H5_CHECK_GOTO(status, open->type, fail, path, "reading the type of attribute '%s'", name);
    open->type_class = H5Tget_class(open->type);
    space = H5Aget_space(open->attribute);
    FV_H5_CHECK_GOTO(status, space, fail, path, "reading the shape of attribute '%s'", name);
    open->elements = H5Sget_simple_extent_npoints(space);
    FV_H5_CHECK_GOTO(status, open->elements, fail, path, "counting attribute '%s'", name);
    H5Sclose(space);
    space = H5I_INVALID_HID;
    if (open->type_class != expected_class) {
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "attribute '%s' in %s has an unexpected type", name, path);
        goto fail;
    }
    if (scalar && open->elements != 1) {
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "attribute '%s' in %s has %lld elements, expected one", name,
                                path, (long long)open->elements);
        goto fail;
    }
    return FV_OK;
fail:
    fv_h5_close(&space);
    close_attribute(open);
    return status;
}

static fv_status read_variable_string(open_attribute *open, const char *name, const char *path,
                                      char **value)
{
    hid_t memory_type = H5Tcopy(H5T_C_S1);
    FV_H5_CHECK(memory_type, path, "creating a string type for attribute '%s'", name);
    fv_status status = FV_OK;
    char *stored = NULL;
    FV_H5_CHECK_GOTO(status, H5Tset_size(memory_type, H5T_VARIABLE), done, path,
                     "sizing a string type for attribute '%s'", name);
    FV_H5_CHECK_GOTO(status, H5Tset_cset(memory_type, H5Tget_cset(open->type)), done, path,
                     "setting the character set for attribute '%s'", name);
    FV_H5_CHECK_GOTO(status, H5Aread(open->attribute, memory_type, &stored), done, path,
                     "reading attribute '%s'", name);
    *value = strdup(stored ? stored : "");
    H5free_memory(stored);
    if (*value == NULL)
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
done:
    H5Tclose(memory_type);
    return status;
}

static fv_status read_fixed_string(open_attribute *open, const char *name, const char *path,
                                   char **value)
{
    size_t size = H5Tget_size(open->type);
    if (size == 0 || size > MAX_STRING_ATTRIBUTE_BYTES)
        FV_FAIL(FV_ERR_CORRUPT, "attribute '%s' in %s has an unexpected size", name, path);
    hid_t memory_type = H5Tcopy(H5T_C_S1);
    FV_H5_CHECK(memory_type, path, "creating a string type for attribute '%s'", name);
    fv_status status = FV_OK;
    char *buffer = calloc(size + 1, 1);
    if (buffer == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    FV_H5_CHECK_GOTO(status, H5Tset_size(memory_type, size + 1), done, path,
                     "sizing a string type for attribute '%s'", name);
    FV_H5_CHECK_GOTO(status, H5Tset_strpad(memory_type, H5T_STR_NULLTERM), done, path,
                     "setting string padding for attribute '%s'", name);
    FV_H5_CHECK_GOTO(status, H5Tset_cset(memory_type, H5Tget_cset(open->type)), done, path,
                     "setting the character set for attribute '%s'", name);
    FV_H5_CHECK_GOTO(status, H5Aread(open->attribute, memory_type, buffer), done, path,
                     "reading attribute '%s'", name);
    buffer[size] = '\0';
    *value = buffer;
    buffer = NULL;
done:
    free(buffer);
    H5Tclose(memory_type);
    return status;
}

fv_status fv_h5_read_string_attribute(hid_t object, const char *name, const char *path,
                                      char **value)
{
    open_attribute open;
    FV_TRY(open_checked(object, name, path, H5T_STRING, true, &open));
    fv_status status;
    htri_t variable = H5Tis_variable_str(open.type);
    if (variable < 0)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path,
                             "inspecting the type of attribute '%s'", name);
    else if (variable > 0)
        status = read_variable_string(&open, name, path, value);
    else
        status = read_fixed_string(&open, name, path, value);
    close_attribute(&open);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* Reads a one-element attribute of `type_class` converted to `memory_type`. */
static fv_status read_scalar(hid_t object, const char *name, const char *path,
                             H5T_class_t type_class, hid_t memory_type, void *value)
{
    open_attribute open;
    FV_TRY(open_checked(object, name, path, type_class, true, &open));
    fv_status status = FV_OK;
    if (H5Aread(open.attribute, memory_type, value) < 0)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path,
                             "reading attribute '%s'", name);
    close_attribute(&open);
    return status;
}

fv_status fv_h5_read_int64_attribute(hid_t object, const char *name, const char *path,
                                     int64_t *value)
{
    int64_t read = 0;
    FV_TRY(read_scalar(object, name, path, H5T_INTEGER, H5T_NATIVE_INT64, &read));
    *value = read;
    return FV_OK;
}

fv_status fv_h5_read_uint64_attribute(hid_t object, const char *name, const char *path,
                                      uint64_t *value)
{
    uint64_t read = 0;
    FV_TRY(read_scalar(object, name, path, H5T_INTEGER, H5T_NATIVE_UINT64, &read));
    *value = read;
    return FV_OK;
}

fv_status fv_h5_read_double_attribute(hid_t object, const char *name, const char *path,
                                      double *value)
{
    double read = 0.0;
    FV_TRY(read_scalar(object, name, path, H5T_FLOAT, H5T_NATIVE_DOUBLE, &read));
    *value = read;
    return FV_OK;
}

fv_status fv_h5_read_int64_array_attribute(hid_t object, const char *name, const char *path,
                                           int capacity, int64_t *values, int *count)
{
    open_attribute open;
    FV_TRY(open_checked(object, name, path, H5T_INTEGER, false, &open));
    fv_status status = FV_OK;
    if (open.elements > capacity) {
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "attribute '%s' in %s has %lld elements, at most %d expected",
                                name, path, (long long)open.elements, capacity);
    } else if (open.elements > 0 && H5Aread(open.attribute, H5T_NATIVE_INT64, values) < 0) {
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path,
                             "reading attribute '%s'", name);
    } else {
        *count = (int)open.elements;
    }
    close_attribute(&open);
    return status;
}
