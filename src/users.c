/* A user's name through the system's user database (NSS: files, sssd, LDAP, systemd's) */
#include <pwd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

bool user_name(uid_t uid, char *ret, size_t size)
{
        char buf[4096];
        struct passwd pw, *res = NULL;
        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res || !res->pw_name[0])
                return false;
        gr_strlcpy(ret, res->pw_name, size);
        return true;
}
