"""REST API. Reads go through ``access_*`` / ``visible_to``; writes call the same services
as the HTML views, carrying the task version they were made on."""

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hilbench_annotate import selectors, services
from hilbench_annotate.access import (
    access_blocker,
    access_task,
    access_trigger_question,
    require_task_editor,
)
from hilbench_annotate.serializers import (
    BlockerCreateIn,
    BlockerOut,
    BlockerUpdateIn,
    ProjectOut,
    TaskDetailOut,
    TaskListOut,
    TaskUpdateIn,
    TriggerQuestionIn,
    TriggerQuestionOut,
)


class ProjectListApi(generics.ListAPIView):
    serializer_class = ProjectOut

    def get_queryset(self):
        return selectors.readable_projects(user=self.request.user)


@extend_schema(
    parameters=[
        OpenApiParameter("project", int),
        OpenApiParameter("domain", str, enum=["swe", "sql"]),
        OpenApiParameter("status", str),
        OpenApiParameter("author", str),
        OpenApiParameter("resource", str, description="database id or repository name"),
        OpenApiParameter(
            "q",
            str,
            description="search words: title, source id, database, repository, specification, "
            "blockers (descriptions, resolutions, trigger questions), comments",
        ),
    ]
)
class TaskListApi(generics.ListAPIView):
    serializer_class = TaskListOut

    def get_queryset(self):
        return selectors.task_list(user=self.request.user, filters=self.request.query_params)

    def paginate_queryset(self, queryset):
        """The page's ids first, then their rows (as the HTML list): joined before the sort,
        every task of the user's projects was read for one page."""
        ids = super().paginate_queryset(selectors.task_ids(tasks=queryset))
        return None if ids is None else selectors.tasks_in_order(tasks=queryset, ids=list(ids))


class TaskDetailApi(APIView):
    @extend_schema(responses=TaskDetailOut)
    def get(self, request, task_id: int):
        task = selectors.task_detail(user=request.user, task_id=task_id)
        return Response(TaskDetailOut(task).data)

    @extend_schema(request=TaskUpdateIn, responses=TaskDetailOut)
    def patch(self, request, task_id: int):
        data = _valid(TaskUpdateIn, request)
        task = access_task(request.user, task_id)
        require_task_editor(request.user, task)
        services.task_update(task=task, actor=request.user, **data)
        return Response(
            TaskDetailOut(selectors.task_detail(user=request.user, task_id=task_id)).data
        )


class BlockerListApi(APIView):
    @extend_schema(responses=BlockerOut(many=True))
    def get(self, request, task_id: int):
        task = access_task(request.user, task_id)
        blockers = selectors.task_blockers(task=task)
        return Response(BlockerOut(blockers, many=True).data)

    @extend_schema(request=BlockerCreateIn, responses={201: BlockerOut})
    def post(self, request, task_id: int):
        data = _valid(BlockerCreateIn, request)
        task = access_task(request.user, task_id)
        require_task_editor(request.user, task)
        blocker = services.blocker_create(task=task, actor=request.user, **data)
        return Response(BlockerOut(blocker).data, status=status.HTTP_201_CREATED)


class BlockerDetailApi(APIView):
    @extend_schema(responses=BlockerOut)
    def get(self, request, blocker_id: int):
        return Response(BlockerOut(access_blocker(request.user, blocker_id)).data)

    @extend_schema(request=BlockerUpdateIn, responses=BlockerOut)
    def patch(self, request, blocker_id: int):
        # Not partial: BlockerUpdateIn makes every field optional but expected_version.
        data = _valid(BlockerUpdateIn, request)
        blocker = access_blocker(request.user, blocker_id)
        require_task_editor(request.user, blocker.task)
        blocker = services.blocker_update(blocker=blocker, actor=request.user, **data)
        return Response(BlockerOut(blocker).data)

    @extend_schema(
        request=None,
        responses={204: None},
        parameters=[OpenApiParameter("expected_version", int, required=True)],
    )
    def delete(self, request, blocker_id: int):
        version = _version_param(request)
        blocker = access_blocker(request.user, blocker_id)
        require_task_editor(request.user, blocker.task)
        services.blocker_delete(blocker=blocker, actor=request.user, expected_version=version)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TriggerQuestionCreateApi(APIView):
    @extend_schema(request=TriggerQuestionIn, responses={201: TriggerQuestionOut})
    def post(self, request, blocker_id: int):
        data = _valid(TriggerQuestionIn, request)
        blocker = access_blocker(request.user, blocker_id)
        require_task_editor(request.user, blocker.task)
        question = services.trigger_question_create(blocker=blocker, actor=request.user, **data)
        return Response(TriggerQuestionOut(question).data, status=status.HTTP_201_CREATED)


class TriggerQuestionDetailApi(APIView):
    @extend_schema(request=TriggerQuestionIn, responses=TriggerQuestionOut)
    def patch(self, request, question_id: int):
        data = _valid(TriggerQuestionIn, request)
        question = access_trigger_question(request.user, question_id)
        require_task_editor(request.user, question.blocker.task)
        question = services.trigger_question_update(question=question, actor=request.user, **data)
        return Response(TriggerQuestionOut(question).data)

    @extend_schema(
        request=None,
        responses={204: None},
        parameters=[OpenApiParameter("expected_version", int, required=True)],
    )
    def delete(self, request, question_id: int):
        version = _version_param(request)
        question = access_trigger_question(request.user, question_id)
        require_task_editor(request.user, question.blocker.task)
        services.trigger_question_delete(
            question=question, actor=request.user, expected_version=version
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


def _valid(serializer_class, request, partial: bool = False) -> dict:
    serializer = serializer_class(data=request.data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _version_param(request) -> int:
    serializer = BlockerUpdateIn(
        data={"expected_version": request.query_params.get("expected_version")}
    )
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data["expected_version"]


urlpatterns = [
    path("projects/", ProjectListApi.as_view(), name="api-project-list"),
    path("tasks/", TaskListApi.as_view(), name="api-task-list"),
    path("tasks/<int:task_id>/", TaskDetailApi.as_view(), name="api-task-detail"),
    path("tasks/<int:task_id>/blockers/", BlockerListApi.as_view(), name="api-blocker-list"),
    path("blockers/<int:blocker_id>/", BlockerDetailApi.as_view(), name="api-blocker-detail"),
    path(
        "blockers/<int:blocker_id>/trigger-questions/",
        TriggerQuestionCreateApi.as_view(),
        name="api-trigger-question-create",
    ),
    path(
        "trigger-questions/<int:question_id>/",
        TriggerQuestionDetailApi.as_view(),
        name="api-trigger-question-detail",
    ),
]
