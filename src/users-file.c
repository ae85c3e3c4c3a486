/* A user's name from /etc/passwd alone, for gpureap-run (src/main-run.c): a static program cannot
 * load NSS's other modules (sssd, LDAP, systemd's), which are shared objects of the libc they
 * were built with; there a user of those shows as a number. glibc's fgetpwent_r reads the file
 * without NSS. */
#include <pwd.h>
#include <stdio.h>

#include "gpureap/basic.h"
#include "gpureap.h"

bool user_name(uid_t uid, char *ret, size_t size)
{
        FILE *f = fopen("/etc/passwd", "re");
        if (!f)
                return false;
        char buf[4096];
        struct passwd pw, *res = NULL;
        bool found = false;
        while (!found && fgetpwent_r(f, &pw, buf, sizeof(buf), &res) == 0 && res)
                if (res->pw_uid == uid && res->pw_name[0]) {
                        gr_strlcpy(ret, res->pw_name, size);
                        found = true;
                }
        fclose(f);
        return found;
}
