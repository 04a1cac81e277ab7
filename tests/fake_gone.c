/*
 * libconvoy_gone: the dependency of the test module "fakegone" (tests/fake_module.c),
 * which the dynamic loader cannot find when the module is loaded (tests/local.mk says
 * how it is linked).
 */
int convoy_fake_gone(void);

int convoy_fake_gone(void)
{
    return 0;
}
